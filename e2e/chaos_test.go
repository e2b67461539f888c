package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// signalMember sends sig (KILL, STOP, CONT) to the rolisd process of pod,
// from its node (the container's own PID 1 cannot be killed from inside).
func signalMember(ns, pod, sig string) {
	GinkgoHelper()
	signalMembers(ns, []string{pod}, sig)
}

// signalMembers sends sig to the rolisd process of every pod at once: one
// `docker exec` per node, all started together, each signalling the pods of
// its node in one loop. A process is found by its pod's uid in its cgroup
// path (the restricted pod security admits no exec of kill in the pod, and
// the container's PID 1 ignores signals sent from inside it).
func signalMembers(ns string, pods []string, sig string) {
	GinkgoHelper()
	uids := map[string][]string{} // node -> pod uids
	for _, pod := range pods {
		out := must(20*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName} {.metadata.uid}")
		f := strings.Fields(out)
		Expect(f).To(HaveLen(2), out)
		// The cgroup path spells the uid with '_' under the systemd driver.
		uids[f[0]] = append(uids[f[0]], f[1], strings.ReplaceAll(f[1], "-", "_"))
	}
	type result struct {
		node, out string
		err       error
	}
	done := make(chan result, len(uids))
	for node, ids := range uids {
		script := fmt.Sprintf(`n=0; for p in $(pgrep -f '^/usr/local/bin/rolisd'); do
  if grep -Eq 'pod(%s)' /proc/$p/cgroup; then kill -%s $p && n=$((n+1)); fi
done; echo $n`, strings.Join(ids, "|"), sig)
		go func() {
			out, err := run(30*time.Second, "docker", "exec", node, "bash", "-c", script)
			done <- result{node, out, err}
		}()
	}
	total := 0
	for range uids {
		r := <-done
		Expect(r.err).NotTo(HaveOccurred(), "%s: %s", r.node, r.out)
		n, err := strconv.Atoi(strings.TrimSpace(r.out))
		Expect(err).NotTo(HaveOccurred(), "%s: %s", r.node, r.out)
		total += n
	}
	Expect(total).To(Equal(len(pods)), "rolisd processes of %v signalled", pods)
}
