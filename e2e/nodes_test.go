package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Nodes of the Kind cluster are docker containers named like the nodes.

// podNode is the node pod runs on.
func podNode(ns, pod string) string {
	GinkgoHelper()
	node := must(20*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")
	Expect(node).NotTo(BeEmpty(), "pod %s is not scheduled", pod)
	return node
}

// cutTag marks the iptables rules of a network cut, so healing removes
// exactly those.
const cutTag = "rolis-e2e-cut"

// cutNode drops every packet into or out of node's eth0 (its link to the
// Kind network): the API server, the other nodes and their pods no longer
// reach it or its pods, and the other way round. The node's addresses stay
// as they are (docker network disconnect/connect could hand out new ones).
// The cut is healed at the end of the spec at the latest.
func cutNode(node string) {
	GinkgoHelper()
	script := fmt.Sprintf(`set -e
for c in INPUT FORWARD; do iptables -I $c 1 -i eth0 -m comment --comment %[1]s -j DROP; done
for c in OUTPUT FORWARD; do iptables -I $c 1 -o eth0 -m comment --comment %[1]s -j DROP; done`, cutTag)
	DeferCleanup(healNode, node)
	out, err := run(30*time.Second, "docker", "exec", node, "bash", "-c", script)
	Expect(err).NotTo(HaveOccurred(), out)
}

// healNode removes the rules of cutNode (none: nothing happens).
func healNode(node string) {
	GinkgoHelper()
	script := fmt.Sprintf(`iptables -S | grep -- '--comment %s' | sed 's/^-A /-D /' | while read -r r; do iptables $r; done
! iptables -S | grep -q -- %s`, cutTag, cutTag)
	out, err := run(30*time.Second, "docker", "exec", node, "bash", "-c", script)
	Expect(err).NotTo(HaveOccurred(), "healing %s: %s", node, out)
}

// evict asks the API server to evict pod, as kubectl drain does; it returns
// the API server's answer and whether the eviction was accepted.
func evict(ns, pod string) (string, bool) {
	GinkgoHelper()
	body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, pod, ns)
	out, err := run(30*time.Second, "bash", "-c", fmt.Sprintf("printf '%%s' '%s' | %s --context %s create --raw /api/v1/namespaces/%s/pods/%s/eviction -f -",
		body, E.Kubectl, E.Context, ns, pod))
	return strings.TrimSpace(out), err == nil
}

// operatorSelector selects the operator's pods (not the helm test's).
const operatorSelector = "app.kubernetes.io/name=rolis-operator,app.kubernetes.io/component=operator"

// operatorReplicas is the operator Deployment's replica count.
func operatorReplicas() int {
	GinkgoHelper()
	var n int
	_, err := fmt.Sscan(must(20*time.Second, "-n", operatorNS, "get", "deployment", operatorRelease, "-o", "jsonpath={.spec.replicas}"), &n)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// stopOperator scales the operator to nothing and kills its pods at once
// (no graceful shutdown: whatever it was doing stops mid-way).
func stopOperator() {
	GinkgoHelper()
	must(30*time.Second, "-n", operatorNS, "scale", "deployment", operatorRelease, "--replicas=0")
	must(time.Minute, "-n", operatorNS, "delete", "pods", "-l", operatorSelector,
		"--grace-period=0", "--force", "--wait=false")
	Eventually(func() string {
		out, _ := kubectl(20*time.Second, "-n", operatorNS, "get", "pods", "-l", operatorSelector, "-o", "name")
		return strings.TrimSpace(out)
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(BeEmpty())
}

// startOperator scales the operator back to n replicas and waits until they
// are available.
func startOperator(n int) {
	GinkgoHelper()
	must(30*time.Second, "-n", operatorNS, "scale", "deployment", operatorRelease, fmt.Sprintf("--replicas=%d", n))
	must(3*time.Minute, "-n", operatorNS, "rollout", "status", "deployment", operatorRelease, "--timeout=150s")
}
