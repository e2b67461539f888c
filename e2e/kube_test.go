package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

const (
	operatorNS      = "rolis-system"
	operatorRelease = "rolis-operator"
	sampleFile      = "config/samples/db_v1alpha1_roliscluster.yaml"
	sampleName      = "rolis-sample"
	// operatorImage is what make images builds and the chart deploys.
	operatorImage = "rolis/rolis-operator:0.1.0"
	// runLabel marks the namespaces the suite creates, so that a later run
	// finds those an interrupted run left behind (removeLeftovers).
	runLabel = "e2e.rolis.io/run"
	// podSecurityEnforce is the Pod Security admission label of a namespace.
	podSecurityEnforce = "pod-security.kubernetes.io/enforce"
)

// run runs a command with a time limit and returns its combined output.
func run(limit time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = E.Root
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: timed out after %v", name, strings.Join(args, " "), limit)
	}
	return string(out), err
}

func kubectl(limit time.Duration, args ...string) (string, error) {
	return run(limit, E.Kubectl, append([]string{"--context", E.Context}, args...)...)
}

func helm(limit time.Duration, args ...string) (string, error) {
	return run(limit, E.Helm, append([]string{"--kube-context", E.Context}, args...)...)
}

// must runs kubectl and fails the spec on error.
func must(limit time.Duration, args ...string) string {
	GinkgoHelper()
	out, err := kubectl(limit, args...)
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// installOperator installs (or upgrades to) the chart of this checkout,
// with its CRD (a template of the chart: crds.install). --take-ownership
// adopts a CRD that an older checkout applied by hand (docs/packaging.md,
// "CRDs").
func installOperator() {
	GinkgoHelper()
	start := time.Now()
	args := []string{"upgrade", "--install", operatorRelease, "charts/rolis-operator",
		"-n", operatorNS, "--create-namespace", "--wait", "--timeout", "4m", "--take-ownership"}
	// The image keeps its tag when make images rebuilds it: the image's id
	// as a pod annotation restarts the operator on the new one.
	if id, err := run(30*time.Second, "docker", "image", "inspect", "-f", "{{.Id}}", operatorImage); err == nil {
		args = append(args, "--set-string", "podAnnotations.rolis\\.io/image-id="+strings.TrimPrefix(strings.TrimSpace(id), "sha256:"))
	}
	// With the prometheus-operator (hack/kind/addon-prometheus-operator.sh):
	// Prometheus scrapes the operator too, and RolisFailover fires for
	// alertsFailoverWindow after a failover instead of 10 minutes, so that
	// the alerts scenario sees it resolve.
	if _, err := kubectl(30*time.Second, "get", "crd", "servicemonitors.monitoring.coreos.com"); err == nil {
		args = append(args, "--set", "metrics.serviceMonitor.enabled=true", "--set", "alerts.failoverWindow="+alertsFailoverWindow,
			"--set", "metrics.serviceMonitor.interval=10s")
	}
	out, err := helm(5*time.Minute, args...)
	Expect(err).NotTo(HaveOccurred(), "helm upgrade --install: %s", out)
	GinkgoWriter.Printf("operator installed in %v\n", time.Since(start).Round(time.Second))
}

// newNamespace makes a namespace for one spec and deletes it afterwards
// (with what is in it), saving its state first when the spec failed.
func newNamespace(prefix string) string {
	GinkgoHelper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000)
	must(30*time.Second, "create", "namespace", ns)
	// Every pod of the suite must pass the restricted Pod Security Standard:
	// a member pod that stops passing it fails the scenarios.
	must(30*time.Second, "label", "namespace", ns, runLabel+"=true", podSecurityEnforce+"=restricted")
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			saveArtifacts(ns)
		}
		out, err := kubectl(3*time.Minute, "delete", "namespace", ns, "--wait=true", "--timeout=150s")
		if err != nil {
			GinkgoWriter.Printf("deleting namespace %s: %v %s\n", ns, err, out)
		}
	})
	return ns
}

// removeLeftovers deletes the namespaces that an interrupted run (a killed
// suite, a Docker daemon stopped under it) left with their clusters in them.
// Its members come back with the node and would run beside this run's,
// idle but not free: on a 2-core machine a left-over cluster's heartbeats
// and the restarting control plane failed the probes of this run's pods.
func removeLeftovers() {
	GinkgoHelper()
	out := must(time.Minute, "get", "namespaces", "-l", runLabel, "-o", "name")
	left := strings.Fields(out)
	if len(left) == 0 {
		return
	}
	start := time.Now()
	GinkgoWriter.Printf("deleting %d namespaces left by an interrupted run: %s\n", len(left), strings.Join(left, " "))
	must(6*time.Minute, append([]string{"delete", "--wait=true", "--timeout=5m"}, left...)...)
	GinkgoWriter.Printf("left-over namespaces deleted in %v\n", time.Since(start).Round(time.Second))
}

// kube is the suite's API client for the reads it polls. Each read was a
// kubectl process (waitNewLeader reads every 200 ms): on the 2-core VM
// that kept much of a CPU busy while the cluster under test failed over.
var kube ctrlclient.Client

// newKubeClient is a client of the kubeconfig context kubectl uses.
func newKubeClient() (ctrlclient.Client, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
		&clientcmd.ConfigOverrides{CurrentContext: E.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", E.Context, err)
	}
	scheme := runtime.NewScheme()
	if err := dbv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return ctrlclient.New(cfg, ctrlclient.Options{Scheme: scheme})
}

// getCluster reads a RolisCluster.
func getCluster(ns, name string) (*dbv1.RolisCluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var c dbv1.RolisCluster
	if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func isReady(c *dbv1.RolisCluster) bool {
	return meta.IsStatusConditionTrue(c.Status.Conditions, dbv1.ConditionReady) &&
		c.Status.ObservedGeneration == c.Generation
}

// waitCluster reads the cluster every poll until check passes; it returns
// the cluster.
func waitCluster(ns, name string, limit, poll time.Duration, check func(g Gomega, c *dbv1.RolisCluster)) *dbv1.RolisCluster {
	GinkgoHelper()
	var c *dbv1.RolisCluster
	Eventually(func(g Gomega) {
		var err error
		c, err = getCluster(ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		check(g, c)
	}).WithTimeout(limit).WithPolling(poll).Should(Succeed())
	return c
}

// waitReady waits until the cluster is Ready with a leader; it returns it.
func waitReady(ns, name string, limit time.Duration) *dbv1.RolisCluster {
	GinkgoHelper()
	return waitCluster(ns, name, limit, time.Second, func(g Gomega, c *dbv1.RolisCluster) {
		g.Expect(isReady(c)).To(BeTrue(), "conditions: %v", c.Status.Conditions)
		g.Expect(c.Status.Leader).NotTo(BeEmpty())
	})
}

// applySample applies config/samples (the file users apply) in ns, with
// spec.tls.enabled: false: the scenarios of replication, failover and
// operations reach the members through plaintext port-forwards, with or
// without cert-manager. The sample as users apply it (TLS by default) is
// the security scenario's (applySampleAsIs). changes edit the spec further.
func applySample(ns string, changes ...func(spec map[string]any)) {
	GinkgoHelper()
	applySampleWith(ns, func(spec map[string]any) {
		spec["tls"] = map[string]any{"enabled": false}
		for _, change := range changes {
			change(spec)
		}
	})
}

// applySampleWith applies config/samples in ns after change edited its spec.
func applySampleWith(ns string, change func(spec map[string]any)) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(E.Root, sampleFile))
	Expect(err).NotTo(HaveOccurred())
	obj := map[string]any{}
	Expect(yaml.Unmarshal(data, &obj)).To(Succeed())
	change(obj["spec"].(map[string]any))
	out, err := yaml.Marshal(obj)
	Expect(err).NotTo(HaveOccurred())
	f := filepath.Join(GinkgoT().TempDir(), "sample.yaml")
	Expect(os.WriteFile(f, out, 0o644)).To(Succeed())
	must(time.Minute, "-n", ns, "apply", "-f", f)
}

// applySampleAsIs applies config/samples unchanged in ns.
func applySampleAsIs(ns string) {
	GinkgoHelper()
	must(time.Minute, "-n", ns, "apply", "-f", sampleFile)
}

// podNames are the member pods of a cluster of n replicas (StatefulSet
// ordinals start at specs.FirstOrdinal, the members' ids).
func podNames(name string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", name, int(specs.FirstOrdinal)+i)
	}
	return out
}

func describe(c *dbv1.RolisCluster) string {
	w := "-"
	if c.Status.Watermark != nil {
		w = fmt.Sprintf("%d.%d", c.Status.Watermark.Epoch, c.Status.Watermark.TS)
	}
	return fmt.Sprintf("phase %s leader %s epoch %d watermark %s ready %d/%d", c.Status.Phase, c.Status.Leader,
		c.Status.Epoch, w, c.Status.ReadyReplicas, c.Status.Replicas)
}

// podUID is the uid of a pod ("" when absent).
func podUID(ns, pod string) string {
	out, err := kubectl(20*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		return ""
	}
	return out
}

// waitContainerRestarted waits until pod's container has restarted at least
// once (its process was killed) and the pod is Ready again.
func waitContainerRestarted(ns, pod string, limit time.Duration) {
	GinkgoHelper()
	waitContainerRestartedSince(ns, pod, 0, limit)
}

// restartCount is how often pod's container has restarted.
func restartCount(ns, pod string) int {
	GinkgoHelper()
	out := must(20*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	Expect(err).NotTo(HaveOccurred(), "restart count of %s: %q", pod, out)
	return n
}

// waitContainerRestartedSince waits until pod's container has restarted
// more than before times and the pod is Ready again.
func waitContainerRestartedSince(ns, pod string, before int, limit time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		out, err := kubectl(20*time.Second, "-n", ns, "get", "pod", pod, "-o",
			`jsonpath={.status.containerStatuses[0].restartCount} {.status.conditions[?(@.type=="Ready")].status}`)
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(2))
		n, err := strconv.Atoi(f[0])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(n).To(BeNumerically(">", before), "restarts of %s", pod)
		g.Expect(f[1]).To(Equal("True"))
	}).WithTimeout(limit).WithPolling(time.Second).Should(Succeed())
}

// waitPodReplaced waits until pod runs again under a new uid and is Ready.
func waitPodReplaced(ns, pod, oldUID string, limit time.Duration) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		out, err := kubectl(20*time.Second, "-n", ns, "get", "pod", pod, "-o",
			`jsonpath={.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}`)
		g.Expect(err).NotTo(HaveOccurred())
		f := strings.Fields(out)
		g.Expect(f).To(HaveLen(2))
		g.Expect(f[0]).NotTo(Equal(oldUID))
		g.Expect(f[1]).To(Equal("True"))
	}).WithTimeout(limit).WithPolling(time.Second).Should(Succeed())
}
