package e2e

// The Kubernetes half of the security model (docs/operations.md,
// "Kubernetes security"): TLS by default, the NetworkPolicy enforced by
// kube-router's firewall (hack/kind/addon-network-policies.sh), and the
// operator's RBAC in both modes of the chart. Part of `make e2e-full`.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/pkg/client"
)

const toolsImage = "rolis/rolis-tools:0.1.0"

// probePod is a pod that only sleeps, from which connections are tried
// (kubectl exec). It passes the restricted Pod Security Standard.
func probePod(ns, name string, labels map[string]string) {
	GinkgoHelper()
	var l []string
	for k, v := range labels {
		l = append(l, fmt.Sprintf("%q: %q", k, v))
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {%s}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
  - name: probe
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sleep", "infinity"]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: ["ALL"]}
`, name, strings.Join(l, ", "), toolsImage)
	f := filepath.Join(GinkgoT().TempDir(), name+".yaml")
	Expect(os.WriteFile(f, []byte(manifest), 0o644)).To(Succeed())
	must(time.Minute, "-n", ns, "apply", "-f", f)
	must(3*time.Minute, "-n", ns, "wait", "--for=condition=Ready", "pod/"+name, "--timeout=170s")
}

// connects tries a TCP connection from a probe pod (bash's /dev/tcp, 3 s).
func connects(ns, from, ip string, port int32) bool {
	out, _ := kubectl(30*time.Second, "-n", ns, "exec", from, "--", "bash", "-c",
		fmt.Sprintf("timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%d' && echo open || echo closed", ip, port))
	return strings.Contains(out, "open")
}

func podIP(ns, pod string) string {
	GinkgoHelper()
	ip := strings.TrimSpace(must(30*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.status.podIP}"))
	Expect(ip).NotTo(BeEmpty())
	return ip
}

// canI asks the API server whether a service account may do something.
func canI(sa string, args ...string) bool {
	out, _ := kubectl(30*time.Second, append([]string{"auth", "can-i", "--as=" + sa}, args...)...)
	return strings.TrimSpace(out) == "yes"
}

var _ = Describe("Security", Label("security"), Ordered, func() {
	var ns string
	var c *dbv1.RolisCluster
	BeforeAll(func() {
		_, err := kubectl(30*time.Second, "get", "crd", "certificates.cert-manager.io")
		Expect(err).NotTo(HaveOccurred(), "cert-manager must be installed (hack/kind/addon-cert-manager.sh; make e2e-full does it)")
		_, err = kubectl(30*time.Second, "-n", "kube-system", "get", "daemonset", "kube-router")
		Expect(err).NotTo(HaveOccurred(), "the NetworkPolicy enforcer must run (hack/kind/addon-network-policies.sh; make e2e-full does it)")
		ns = newNamespace("e2e-sec")
		Expect(must(30*time.Second, "get", "namespace", ns, "-o", "jsonpath={.metadata.labels}")).
			To(ContainSubstring(`"`+podSecurityEnforce+`":"restricted"`), "the namespace enforces the restricted standard")
		applySampleAsIs(ns)
		c = waitReady(ns, sampleName, 6*time.Minute)
		GinkgoWriter.Println(sampleName+":", describe(c))
	})

	It("the sample, with no TLS settings, runs mutual TLS from its own CA", func() {
		Expect(c.Annotations).To(HaveKeyWithValue(dbv1.AnnotationTLSMode, dbv1.TLSModeMutual))
		Expect(c.Status.Conditions).NotTo(ContainElement(HaveField("Type", "TLSDisabled")))
		certs := strings.Fields(must(30*time.Second, "-n", ns, "get", "certificates.cert-manager.io", "-o", "name"))
		for _, name := range []string{"rolis-sample-ca", "rolis-sample-server", "rolis-sample-operator", "rolis-sample-client"} {
			Expect(certs).To(ContainElement("certificate.cert-manager.io/"+name), "certificate %s", name)
		}
		Expect(must(30*time.Second, "-n", ns, "get", "statefulset", sampleName, "-o", "jsonpath={.spec.template.spec.containers[0].args}")).
			To(And(ContainSubstring("--tls-ca="), ContainSubstring("--tls-trust-domain=rolis."+ns+"."+sampleName)))

		dir := GinkgoT().TempDir()
		files := secretFiles(ns, specs.ClientSecretName(c), dir)
		fw := forward(ns, podNames(sampleName, int(c.Spec.Replicas)))
		put := func(cfg client.Config) error {
			cfg.Endpoints, cfg.MaxRedirects = []string{fw.clientAddr(c.Status.Leader)}, -1
			cl, err := client.New(context.Background(), cfg)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return cl.Put(ctx, []byte("sec/probe"), []byte("1"))
		}
		By("a client with the cluster's client certificate writes; a plaintext client is refused")
		Eventually(func() error {
			return put(client.Config{CAFile: files["ca.crt"], CertFile: files["tls.crt"], KeyFile: files["tls.key"]})
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(put(client.Config{})).NotTo(Succeed())
	})

	It("the client port admits only pods that match spec.clientSelector; the replication ports only members", func() {
		must(30*time.Second, "-n", ns, "patch", "roliscluster", sampleName, "--type=merge",
			"-p", `{"spec":{"clientSelector":{"matchLabels":{"rolis-client":"true"}}}}`)
		Eventually(func() string {
			return must(30*time.Second, "-n", ns, "get", "networkpolicy", sampleName, "-o", "jsonpath={.spec.ingress}")
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("rolis-client"))
		probePod(ns, "app", map[string]string{"rolis-client": "true"})
		probePod(ns, "stranger", map[string]string{"role": "other"})
		member := podIP(ns, podNames(sampleName, 1)[0])

		By("a pod with the client label reaches the client port (the probe works)")
		Eventually(func() bool { return connects(ns, "app", member, specs.ClientPort) }).
			WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
		By("a pod without it does not")
		Eventually(func() bool { return connects(ns, "stranger", member, specs.ClientPort) }).
			WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(BeFalse())
		Consistently(func() bool { return connects(ns, "stranger", member, specs.ClientPort) }).
			WithTimeout(15 * time.Second).WithPolling(5 * time.Second).Should(BeFalse())
		By("a pod that is not a member reaches neither the replication nor the accept-stream port, nor the admin port")
		for _, port := range []int32{specs.ReplicationPort, specs.AcceptStreamPort, specs.AdminPort} {
			Expect(connects(ns, "app", member, port)).To(BeFalse(), "port %d from a non-member", port)
		}
		By("the members still replicate to each other (the cluster stays Ready)")
		waitReady(ns, sampleName, 2*time.Minute)
	})

	It("the operator's service account can read no Secret beyond its own by name, nor list Secrets (cluster-wide mode)", func() {
		sa := "system:serviceaccount:" + operatorNS + ":" + operatorRelease
		Expect(canI(sa, "get", "secrets", "-n", ns)).To(BeTrue(), "it reads the certificates' Secrets by name")
		Expect(canI(sa, "list", "secrets", "--all-namespaces")).To(BeFalse())
		Expect(canI(sa, "watch", "secrets", "-n", ns)).To(BeFalse())
		Expect(canI(sa, "delete", "secrets", "-n", ns)).To(BeFalse())
		Expect(canI(sa, "create", "secrets", "-n", ns)).To(BeFalse())
	})

	It("in namespaced mode, the operator's roles reach only the listed namespaces", func() {
		// The chart's RBAC of a second release in namespaced mode, rendered
		// and applied without its Deployment: one operator runs at a time.
		home := newNamespace("e2e-rbac")
		watched := newNamespace("e2e-rbac-watched")
		other := newNamespace("e2e-rbac-other")
		out, err := helm(time.Minute, "template", "rbac-check", "charts/rolis-operator", "-n", home,
			"--set", "watchNamespaces={"+watched+"}", "--set", "metrics.secure=false",
			"--show-only", "templates/rbac.yaml", "--show-only", "templates/serviceaccount.yaml")
		Expect(err).NotTo(HaveOccurred(), out)
		f := filepath.Join(GinkgoT().TempDir(), "rbac.yaml")
		Expect(os.WriteFile(f, []byte(out), 0o644)).To(Succeed())
		must(time.Minute, "apply", "-f", f)
		DeferCleanup(func() { _, _ = kubectl(time.Minute, "delete", "--ignore-not-found", "-f", f) })

		sa := "system:serviceaccount:" + home + ":rbac-check-rolis-operator"
		Eventually(func() bool { return canI(sa, "create", "statefulsets.apps", "-n", watched) }).
			WithTimeout(30*time.Second).WithPolling(time.Second).Should(BeTrue(), "it manages the watched namespace")
		Expect(canI(sa, "get", "secrets", "-n", watched)).To(BeTrue())
		Expect(canI(sa, "list", "secrets", "-n", watched)).To(BeFalse(), "Secrets are read by name only")
		for _, n := range []string{other, "kube-system", "default"} {
			Expect(canI(sa, "get", "secrets", "-n", n)).To(BeFalse(), "Secrets of %s", n)
			Expect(canI(sa, "create", "statefulsets.apps", "-n", n)).To(BeFalse(), "StatefulSets of %s", n)
			Expect(canI(sa, "delete", "pods", "-n", n)).To(BeFalse(), "pods of %s", n)
			Expect(canI(sa, "list", "rolisclusters.db.rolis.io", "-n", n)).To(BeFalse(), "RolisClusters of %s", n)
		}
		Expect(canI(sa, "list", "rolisclusters.db.rolis.io", "--all-namespaces")).To(BeFalse())
	})
})
