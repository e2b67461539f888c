/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

// The commands that only read and write objects, against a real
// kube-apiserver and etcd (envtest) with the RolisCluster CRD and no
// operator: the tests write what the operator would (status, pods, events)
// and check what the commands print and change.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "rolis", "envtest", "v1.36.3")
	}
	if _, err := os.Stat(filepath.Join(dir, "kube-apiserver")); err != nil {
		fmt.Fprintf(os.Stderr, "envtest assets are missing in %s: run `make envtest-assets` or set KUBEBUILDER_ASSETS\n", dir)
		os.Exit(1)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: dir, ControlPlaneStartTimeout: 2 * time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("watch-cache", "false")
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// fixture is a namespace with a RolisCluster "db" of three members, as
// the operator would have left it.
type fixture struct {
	t  *testing.T
	o  *kubeOptions
	c  *dbv1.RolisCluster
	ns string
}

func newFixture(t *testing.T, tls bool) *fixture {
	t.Helper()
	ctx := context.Background()
	o := &kubeOptions{}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "plugin-"}}
	if err := o.use(cfg, ""); err != nil {
		t.Fatal(err)
	}
	if err := o.c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	o.ns = ns.Name
	c := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns.Name},
		Spec: dbv1.RolisClusterSpec{Replicas: 3, Image: "rolis/rolisd:0.1.0"}}
	if tls {
		c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}
	}
	if err := o.c.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, o: o, c: c, ns: ns.Name}
}

// run runs the plugin with args and returns its output.
func (f *fixture) run(args ...string) (string, error) {
	f.t.Helper()
	var out bytes.Buffer
	cmd := newRootCmdWith(f.o)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func (f *fixture) get() *dbv1.RolisCluster {
	f.t.Helper()
	c := &dbv1.RolisCluster{}
	if err := f.o.c.Get(context.Background(), client.ObjectKeyFromObject(f.c), c); err != nil {
		f.t.Fatal(err)
	}
	return c
}

// operatorWrites fills in what the operator and the kubelet would: the
// status, the member pods, a PVC, failover events and the TLS Secrets.
func (f *fixture) operatorWrites(now time.Time) {
	f.t.Helper()
	ctx := context.Background()
	c := f.get()
	lag := metav1.Duration{Duration: 250 * time.Millisecond}
	c.Status = dbv1.RolisClusterStatus{
		Phase: dbv1.PhaseRunning, Leader: "db-2", Epoch: 3, ReadyReplicas: 3, Replicas: 3,
		Watermark: &dbv1.LogKey{Epoch: 3, TS: 48045768704},
		Members: []dbv1.MemberStatus{
			{Name: "db-1", ID: 1, Role: "Follower", Epoch: 3, Healthy: true, Lag: &lag, Version: "0.1.0"},
			{Name: "db-2", ID: 2, Role: "Leader", Epoch: 3, Healthy: true, Lag: &metav1.Duration{}, Version: "0.1.0"},
			{Name: "db-3", ID: 3, Role: "Unreachable", Message: "connection refused"},
		},
		LastSwitchover: &dbv1.SwitchoverRecord{From: "db-1", To: "db-2", Epoch: 3, Time: metav1.NewTime(now.Add(-time.Minute)), Reason: "Requested"},
		Conditions: []metav1.Condition{{Type: dbv1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ClusterReady",
			Message: "3 members", LastTransitionTime: metav1.NewTime(now)}},
	}
	if err := f.o.c.Status().Update(ctx, c); err != nil {
		f.t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		labels := specs.SelectorLabels(c)
		labels[specs.LabelRole] = map[int32]string{1: specs.RoleFollower, 2: specs.RoleLeader, 3: specs.RoleFenced}[id]
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: specs.PodName(c, id), Namespace: f.ns, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: specs.ContainerRun, Image: c.Spec.Image}}}}
		if err := f.o.c.Create(ctx, p); err != nil {
			f.t.Fatal(err)
		}
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-1", Namespace: f.ns, Labels: specs.SelectorLabels(c)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := f.o.c.Create(ctx, pvc); err != nil {
		f.t.Fatal(err)
	}
	for i, e := range []struct {
		reason, note string
		at           time.Time
	}{
		{"LeaderLeaving", "leader db-1 is being deleted: switching over now", now.Add(-2 * time.Minute)},
		{"Promoting", "failover: promoting db-2 ...", now.Add(-2*time.Minute + 100*time.Millisecond)},
		{"Promoted", "db-2 leads epoch 3", now.Add(-2*time.Minute + 1500*time.Millisecond)},
	} {
		ev := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("db.%d", i), Namespace: f.ns},
			EventTime:  metav1.NewMicroTime(e.at), Reason: e.reason, Note: e.note, Type: "Normal", Action: "Promote",
			ReportingController: "rolis-operator", ReportingInstance: "test",
			Regarding: corev1.ObjectReference{Kind: "RolisCluster", Name: "db", Namespace: f.ns},
		}
		if err := f.o.c.Create(ctx, ev); err != nil {
			f.t.Fatal(err)
		}
	}
	if c.TLSEnabled() {
		for _, n := range []string{specs.ServerSecretName(c), specs.ClientSecretName(c)} {
			crt, key := selfSigned(f.t, n, now.Add(90*24*time.Hour))
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: f.ns, Labels: specs.SelectorLabels(c)},
				Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": crt}}
			if err := f.o.c.Create(ctx, s); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

func selfSigned(t *testing.T, cn string, notAfter time.Time) ([]byte, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

func TestStatusShowsMembersLagInSecondsFailoversCertificatesAndVolumes(t *testing.T) {
	f := newFixture(t, true)
	f.operatorWrites(time.Now())

	out, err := f.run("status", "db", "-o", "json")
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, out)
	}
	if r.Leader != "db-2" || r.Epoch != 3 || r.Ready != "True" || r.Spec.Replicas != 3 || r.Spec.RunningMembers != 3 {
		t.Errorf("summary: %+v", r)
	}
	if len(r.Members) != 3 || r.Members[0].LagSeconds == nil || *r.Members[0].LagSeconds != 0.25 || r.Members[0].Version != "0.1.0" {
		t.Errorf("members: %+v", r.Members)
	}
	if r.Members[2].LagSeconds != nil || r.Members[2].Role != "Unreachable" {
		t.Errorf("an unreachable member has no lag: %+v", r.Members[2])
	}
	if len(r.Failovers) != 1 || r.Failovers[0].Leader != "db-2" || r.Failovers[0].Kind != "switchover" ||
		r.Failovers[0].GapSeconds == nil || *r.Failovers[0].GapSeconds < 1.49 || *r.Failovers[0].GapSeconds > 1.51 {
		t.Errorf("failovers: %+v", r.Failovers)
	}
	if len(r.Certificates) != 2 || !strings.HasPrefix(r.Certificates[0].ExpiresIn, "8") || r.Certificates[0].Subject == "" {
		t.Errorf("certificates (90 days left): %+v", r.Certificates)
	}
	if len(r.Volumes) != 1 || r.Volumes[0].Name != "data-db-1" || r.Volumes[0].Capacity != "1Gi" {
		t.Errorf("volumes: %+v", r.Volumes)
	}
	if r.LastSwitchover == nil || r.LastSwitchover.To != "db-2" {
		t.Errorf("last switchover: %+v", r.LastSwitchover)
	}

	table, err := f.run("status", "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"db-1", "0.250s", "Leader", "Unreachable (fenced)", "(3,48045768704)", "switchover", "1.50s", "data-db-1", "db-server-tls", "Last switchover"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	if y, err := f.run("status", "db", "-o", "yaml"); err != nil || !strings.Contains(y, "lagSeconds: 0.25") {
		t.Errorf("status -o yaml: %v\n%s", err, y)
	}
	if _, err := f.run("status", "db", "-o", "xml"); err == nil {
		t.Error("status -o xml is refused")
	}
	if _, err := f.run("status", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("status of a missing cluster: %v", err)
	}
}

func TestPromoteSetsTheAnnotationTheOperatorActsOn(t *testing.T) {
	f := newFixture(t, false)
	f.operatorWrites(time.Now())
	for _, bad := range []string{"db-4", "0", "other-1", "x"} {
		if _, err := f.run("promote", "db", bad); err == nil {
			t.Errorf("promote db %s is refused", bad)
		}
	}
	if _, ok := f.get().Annotations[dbv1.AnnotationPromote]; ok {
		t.Fatal("a refused promote changed nothing")
	}
	if out, err := f.run("promote", "db", "db-2"); err != nil || !strings.Contains(out, "already leads") {
		t.Errorf("promote of the leader: %v %s", err, out)
	}
	if _, err := f.run("promote", "db", "3"); err != nil {
		t.Fatal(err)
	}
	if got := f.get().Annotations[dbv1.AnnotationPromote]; got != "db-3" {
		t.Errorf("%s=%q, want db-3", dbv1.AnnotationPromote, got)
	}
}

func TestFenceAndUnfenceEditSpecFencedMembers(t *testing.T) {
	f := newFixture(t, false)
	if _, err := f.run("fence", "db", "db-2"); err != nil {
		t.Fatal(err)
	}
	if got := f.get().Spec.FencedMembers; len(got) != 1 || got[0] != 2 {
		t.Fatalf("fencedMembers %v, want [2]", got)
	}
	if _, err := f.run("fence", "db", "3"); err != nil {
		t.Fatal(err)
	}
	if got := f.get().Spec.FencedMembers; len(got) != 2 {
		t.Fatalf("fencedMembers %v, want [2 3] (the operator refuses it, not the plugin)", got)
	}
	if _, err := f.run("promote", "db", "db-2"); err == nil {
		t.Error("promoting a fenced member is refused")
	}
	if _, err := f.run("unfence", "db", "db-2"); err != nil {
		t.Fatal(err)
	}
	if got := f.get().Spec.FencedMembers; len(got) != 1 || got[0] != 3 {
		t.Fatalf("fencedMembers %v, want [3]", got)
	}
	if _, err := f.run("fence", "db", "7"); err == nil {
		t.Error("fencing a member the cluster does not have is refused")
	}
}

func TestRestartSetsRestartAnnotations(t *testing.T) {
	f := newFixture(t, false)
	if _, err := f.run("restart", "db"); err != nil {
		t.Fatal(err)
	}
	at := f.get().Annotations[dbv1.AnnotationRestartedAt]
	if ts, err := time.Parse(time.RFC3339, at); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("%s=%q is not the time now", dbv1.AnnotationRestartedAt, at)
	}
	if _, err := f.run("restart", "db", "1"); err != nil {
		t.Fatal(err)
	}
	if got := f.get().Annotations[dbv1.AnnotationRestartMember]; got != "db-1" {
		t.Errorf("%s=%q, want db-1", dbv1.AnnotationRestartMember, got)
	}
	if _, err := f.run("restart", "db", "db-9"); err == nil {
		t.Error("restarting a member the cluster does not have is refused")
	}
}

func TestReportBundlesObjectsEventsAndStatusWithoutSecretData(t *testing.T) {
	f := newFixture(t, true)
	f.operatorWrites(time.Now())
	file := filepath.Join(t.TempDir(), "report.tar.gz")
	if out, err := f.run("report", "db", "--objects-only", "-f", file); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	files := readTarball(t, file)
	for _, want := range []string{"status.json", "objects/roliscluster.yaml", "objects/pods.yaml", "objects/persistentvolumeclaims.yaml",
		"events.yaml", "objects/secret-names.txt"} {
		if _, ok := files["rolis-report-db/"+want]; !ok {
			t.Errorf("the bundle lacks %s (has %v)", want, keys(files))
		}
	}
	if s := files["rolis-report-db/objects/pods.yaml"]; !strings.Contains(s, "kind: PodList") || !strings.Contains(s, "db-3") {
		t.Errorf("pods.yaml:\n%s", s)
	}
	if s := files["rolis-report-db/events.yaml"]; !strings.Contains(s, "db-2 leads epoch 3") {
		t.Errorf("events.yaml lacks the events")
	}
	if s := files["rolis-report-db/objects/secret-names.txt"]; !strings.Contains(s, "db-client-tls") {
		t.Errorf("secret names: %q", s)
	}
	for name, body := range files {
		if strings.Contains(body, "PRIVATE KEY") {
			t.Errorf("%s holds a private key", name)
		}
	}
}

func readTarball(t *testing.T, path string) map[string]string {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close() //nolint:errcheck
	gz, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
