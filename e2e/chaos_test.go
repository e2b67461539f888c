package e2e

import (
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// signalMember sends sig (KILL, STOP, CONT) to the rolisd process of pod,
// from its node (the container's own PID 1 cannot be killed from inside).
// The process is found by the pod's uid in its cgroup path.
func signalMember(ns, pod, sig string) {
	GinkgoHelper()
	out := must(20*time.Second, "-n", ns, "get", "pod", pod, "-o", "jsonpath={.spec.nodeName} {.metadata.uid}")
	f := strings.Fields(out)
	Expect(f).To(HaveLen(2), out)
	node, uid := f[0], f[1]
	script := fmt.Sprintf(`n=0; for p in $(pgrep -f '^/usr/local/bin/rolisd'); do
  if grep -Eq 'pod(%s|%s)' /proc/$p/cgroup; then kill -%s $p && n=$((n+1)); fi
done; echo $n`, uid, strings.ReplaceAll(uid, "-", "_"), sig)
	res, err := run(30*time.Second, "docker", "exec", node, "bash", "-c", script)
	Expect(err).NotTo(HaveOccurred(), res)
	Expect(strings.TrimSpace(res)).To(Equal("1"), "rolisd processes of %s signalled on %s", pod, node)
}
