/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

// The integration tests run the operator's manager, exactly as cmd/operator
// builds it, against a real kube-apiserver and etcd (envtest). No
// controller-manager runs: there is no StatefulSet controller, no garbage
// collector and no kubelet, so the tests create the member pods themselves,
// and map each pod to a process that answers the admin API on loopback (a
// real rolisd when one is built, and fakes that follow the protocol).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testserver"
)

var (
	cfg       *rest.Config
	k8s       client.Client // uncached, for the tests' own reads and writes
	testEnv   *envtest.Environment
	cancelMgr context.CancelFunc
	mgrDone   chan struct{}
	processes = &registry{addr: map[string]string{}, members: map[string]*rolisv1.Member{}}
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "RolisCluster controller (envtest)")
}

// envtestAssets finds kube-apiserver and etcd: $KUBEBUILDER_ASSETS, else the
// folder hack/envtest-assets.sh fills. Missing assets fail the suite: an
// integration test that silently skips is a test that never runs.
func envtestAssets() string {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		cache := os.Getenv("ROLIS_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "rolis")
		}
		k8sVersion := os.Getenv("K8S_VERSION")
		if k8sVersion == "" {
			k8sVersion = "v1.36.3"
		}
		dir = filepath.Join(cache, "envtest", k8sVersion)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			Fail(fmt.Sprintf("envtest assets are missing: no %s in %s (KUBEBUILDER_ASSETS=%q).\n"+
				"Build them with `make envtest-assets` (hack/envtest-assets.sh builds kube-apiserver from the k8s.io/kubernetes "+
				"module and takes etcd from Debian's etcd-server), then run the tests again, or run `make operator-test`.",
				bin, dir, os.Getenv("KUBEBUILDER_ASSETS")))
		}
	}
	return dir
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: envtestAssets(),
		// envtest's 20 s is not enough for kube-apiserver on 2 shared
		// cores under a load average of 30.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	// Debian's etcd is 3.4, which cannot report watch progress; the API
	// server's watch cache then refuses watches with "Too large resource
	// version" for seconds at a time. Serving watches from etcd directly
	// avoids that (and costs nothing at this size).
	testEnv.ControlPlane.GetAPIServer().Configure().Set("watch-cache", "false")
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred(), "starting kube-apiserver and etcd")

	k8s, err = client.New(cfg, client.Options{Scheme: NewScheme()})
	Expect(err).NotTo(HaveOccurred())

	// The manager as the operator runs it, leader election included.
	mgr, err := NewManager(cfg, ManagerOptions{
		MetricsAddr: "0", ProbeAddr: "0",
		LeaderElection: true, LeaderElectionID: "rolis-operator-test", LeaderElectionNamespace: "default",
	})
	Expect(err).NotTo(HaveOccurred())
	timeouts := leadership.DefaultTimeouts()
	timeouts.Probe = 500 * time.Millisecond
	timeouts.Prepare, timeouts.Open, timeouts.Call = 3*time.Second, 3*time.Second, time.Second
	r := &Reconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Scheme:          mgr.GetScheme(),
		Recorder:        mgr.GetEventRecorder("rolis-operator"),
		Dialer:          leadership.GRPCDialer{Resolver: processes, TLS: OperatorTLS(mgr.GetAPIReader(), specs.DefaultOptions())},
		MemberAddresses: processes.memberAddresses,
		Options:         specs.DefaultOptions(),
		Timeouts:        timeouts,
		Identity:        "envtest-operator",
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())

	var ctx context.Context
	ctx, cancelMgr = context.WithCancel(context.Background())
	mgrDone = make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(mgrDone)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(mgr.Elected()).Should(BeClosed(), "the manager wins leader election")
})

var _ = AfterSuite(func() {
	if cancelMgr != nil {
		cancelMgr()
		Eventually(mgrDone).Should(BeClosed())
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// registry maps members (namespace/cluster/id) to admin addresses of
// processes on loopback: envtest runs no pods, so this is how a pod gets a
// rolisd behind it.
type registry struct {
	mu   sync.Mutex
	addr map[string]string
	// members are the processes' own addresses, as ChangeMembership must
	// name them (rolisd refuses an address other than its --peers gave).
	members map[string]*rolisv1.Member
}

func memberKey(ns, cluster string, id int32) string { return fmt.Sprintf("%s/%s/%d", ns, cluster, id) }

func (r *registry) set(ns, cluster string, id int32, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addr[memberKey(ns, cluster, id)] = addr
}

// setProcesses names every member of procs to ChangeMembership by its
// loopback addresses.
func (r *registry) setProcesses(ns, cluster string, procs *testserver.Cluster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range procs.Members {
		r.members[memberKey(ns, cluster, int32(m.ID))] = &rolisv1.Member{Id: uint32(m.ID), Address: m.ReplAddr,
			AdminAddress: m.AdminAddr, ClientAddress: m.ClientAddr}
	}
}

// memberAddresses is the Reconciler's MemberAddresses: a registered
// process, else the pod's DNS names, as in production.
func (r *registry) memberAddresses(c *dbv1.RolisCluster, id int32) *rolisv1.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.members[memberKey(c.Namespace, c.Name, id)]; ok {
		return proto.Clone(m).(*rolisv1.Member)
	}
	return peerMember(c, id, specs.DefaultOptions())
}

// AdminAddress implements leadership.Resolver.
func (r *registry) AdminAddress(t leadership.Target) (string, error) {
	if t.Pod == nil {
		return "", fmt.Errorf("pod of member %d does not exist", t.ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, ok := r.addr[memberKey(t.Cluster.Namespace, t.Cluster.Name, t.ID)]
	if !ok {
		return "", fmt.Errorf("no process runs pod %s", t.Pod.Name)
	}
	return a, nil
}

// newNamespace gives each spec its own namespace; its clusters are deleted
// when the spec ends, so the operator stops probing them.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rolis-test-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(k8s.DeleteAllOf(ctx, &dbv1.RolisCluster{}, client.InNamespace(ns.Name))).To(Succeed())
	})
	return ns.Name
}
