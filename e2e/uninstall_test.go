package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// A cluster with every object the operator can make a namespace-scoped
// copy of (TLS certificates and their secrets, volumes deleted with it).
const fullCluster = `apiVersion: db.rolis.io/v1alpha1
kind: RolisCluster
metadata:
  name: rolis-gone
spec:
  replicas: 3
  image: rolis/rolisd:0.1.0
  storage:
    size: 256Mi
    retentionPolicy:
      whenDeleted: Delete
      whenScaled: Delete
  tls:
    issuerRef:
      kind: ClusterIssuer
      name: rolis-ca
`

// namespacedKinds are what a RolisCluster or the chart can leave in a
// namespace.
const namespacedKinds = "pods,services,endpointslices,persistentvolumeclaims,configmaps,secrets,serviceaccounts," +
	"roles,rolebindings,deployments,replicasets,statefulsets,jobs,poddisruptionbudgets," +
	"leases.coordination.k8s.io,certificates.cert-manager.io,certificaterequests.cert-manager.io,servicemonitors.monitoring.coreos.com"

// leftovers lists the objects in ns, but for what Kubernetes itself keeps
// in every namespace.
func leftovers(ns string) []string {
	GinkgoHelper()
	out := must(time.Minute, "-n", ns, "get", namespacedKinds, "-o", "name")
	var left []string
	for _, o := range strings.Fields(out) {
		if o != "configmap/kube-root-ca.crt" && o != "serviceaccount/default" {
			left = append(left, o)
		}
	}
	return left
}

// volumesOf lists the persistent volumes still claimed from ns.
func volumesOf(ns string) []string {
	GinkgoHelper()
	out := must(30*time.Second, "get", "pv", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.claimRef.namespace}{"\n"}{end}`)
	var pvs []string
	for _, line := range strings.Split(out, "\n") {
		if name, claimNS, ok := strings.Cut(line, " "); ok && claimNS == ns {
			pvs = append(pvs, name)
		}
	}
	return pvs
}

var _ = Describe("Removal", Label("uninstall"), func() {
	It("deleting a RolisCluster and helm uninstall of the operator leave nothing behind", func() {
		ns := newNamespace("e2e-uninstall")
		f := filepath.Join(GinkgoT().TempDir(), "cluster.yaml")
		Expect(os.WriteFile(f, []byte(fullCluster), 0o644)).To(Succeed())
		must(time.Minute, "-n", ns, "apply", "-f", f)
		c := waitReady(ns, "rolis-gone", 5*time.Minute)
		GinkgoWriter.Println("rolis-gone:", describe(c))
		GinkgoWriter.Println("made:", strings.Join(leftovers(ns), " "))

		By("deleting the RolisCluster")
		must(3*time.Minute, "-n", ns, "delete", "roliscluster", "rolis-gone", "--wait=true", "--timeout=150s")
		Eventually(func() []string { return append(leftovers(ns), volumesOf(ns)...) }).
			WithTimeout(3*time.Minute).WithPolling(3*time.Second).Should(BeEmpty(), "left in %s", ns)

		By("helm uninstall of the operator")
		DeferCleanup(installOperator) // the other specs need it
		out, err := helm(5*time.Minute, "uninstall", operatorRelease, "-n", operatorNS, "--wait", "--timeout", "4m")
		Expect(err).NotTo(HaveOccurred(), out)
		Eventually(func() []string { return append(leftovers(operatorNS), volumesOf(operatorNS)...) }).
			WithTimeout(3*time.Minute).WithPolling(3*time.Second).Should(BeEmpty(), "left in %s", operatorNS)
		cluster := must(30*time.Second, "get", "clusterroles,clusterrolebindings", "-l",
			"app.kubernetes.io/instance="+operatorRelease, "-o", "name")
		Expect(strings.Fields(cluster)).To(BeEmpty(), "cluster-scoped objects of the release")
		// The chart keeps its CRD on uninstall (crds.keep: deleting it
		// would delete every RolisCluster of the cluster): kept on purpose.
		crd, _ := kubectl(30*time.Second, "get", "crd", "rolisclusters.db.rolis.io", "-o", "name")
		GinkgoWriter.Println("kept by helm on purpose:", strings.TrimSpace(crd))
	})
})
