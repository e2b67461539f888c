package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/rolisdb/rolis/controllers/specs"
)

// forwards keeps one `kubectl port-forward` per member pod on fixed local
// ports (the client and admin ports), and starts it again when it ends (the pod was deleted, restarted or
// not running yet), so a client configured with every member's local
// address reaches whichever member leads. A member's not-leader reply names
// the leader by its in-cluster DNS name, which does not resolve here; the
// client then tries the next configured endpoint.
type forwards struct {
	ns     string
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	addrs  map[string][2]string // pod -> local client and admin address
	pods   []string

	mu      sync.Mutex
	current map[string]context.CancelFunc // stops the running kubectl of a pod
	stopPod map[string]context.CancelFunc // stops forwarding to a pod for good
}

// freePort asks the kernel for a free loopback port.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		Fail(err.Error())
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// forward starts port-forwards to the client and admin ports of every pod;
// they stop at the end of the spec.
func forward(ns string, pods []string) *forwards {
	GinkgoHelper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &forwards{ns: ns, ctx: ctx, cancel: cancel, addrs: map[string][2]string{}, current: map[string]context.CancelFunc{},
		stopPod: map[string]context.CancelFunc{}}
	DeferCleanup(f.stop)
	f.wg.Add(1)
	go f.followReplacements()
	f.add(pods...)
	return f
}

// followReplacements starts a pod's port-forward again when the pod was
// replaced (another uid under the same name): kubectl does not always
// notice that its pod is gone, and chaos scenarios replace pods all the time.
func (f *forwards) followReplacements() {
	defer f.wg.Done()
	uids := map[string]string{}
	for f.ctx.Err() == nil {
		out, err := kubectl(20*time.Second, "-n", f.ns, "get", "pods", "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}{"\n"}{end}`)
		if err == nil {
			for _, line := range strings.Split(out, "\n") {
				pod, uid, ok := strings.Cut(line, " ")
				if !ok {
					continue
				}
				if old, seen := uids[pod]; seen && old != uid {
					f.mu.Lock()
					if c := f.current[pod]; c != nil {
						c()
					}
					f.mu.Unlock()
				}
				uids[pod] = uid
			}
		}
		select {
		case <-f.ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// remove stops the port-forward of a pod that left (scaled down).
func (f *forwards) remove(pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.stopPod[pod]; c != nil {
		c()
	}
	f.pods = slices.DeleteFunc(f.pods, func(p string) bool { return p == pod })
}

// add starts the port-forwards of more pods (members added by scaling).
func (f *forwards) add(pods ...string) {
	GinkgoHelper()
	for _, p := range pods {
		cp, ap := freePort(), freePort()
		ctx, cancel := context.WithCancel(f.ctx)
		f.mu.Lock()
		f.addrs[p] = [2]string{fmt.Sprintf("127.0.0.1:%d", cp), fmt.Sprintf("127.0.0.1:%d", ap)}
		f.pods = append(f.pods, p)
		f.stopPod[p] = cancel
		f.mu.Unlock()
		f.wg.Add(1)
		go f.keep(ctx, p, fmt.Sprintf("%d:%d", cp, specs.ClientPort), fmt.Sprintf("%d:%d", ap, specs.AdminPort))
	}
	f.waitListening(pods, time.Minute)
}

// waitListening waits until every local port of pods accepts connections
// (kubectl takes seconds to start on a loaded machine).
func (f *forwards) waitListening(pods []string, limit time.Duration) {
	GinkgoHelper()
	deadline := time.Now().Add(limit)
	for _, p := range pods {
		for _, a := range f.addr(p) {
			for {
				c, err := net.DialTimeout("tcp", a, time.Second)
				if err == nil {
					c.Close()
					break
				}
				if time.Now().After(deadline) {
					Fail(fmt.Sprintf("port-forward of %s not listening at %s after %v", p, a, limit))
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
}

func (f *forwards) keep(ctx context.Context, pod string, ports ...string) {
	defer f.wg.Done()
	for ctx.Err() == nil {
		args := []string{"--context", E.Context, "-n", f.ns, "port-forward", "--address", "127.0.0.1", "pod/" + pod}
		one, cancel := context.WithCancel(ctx)
		f.mu.Lock()
		f.current[pod] = cancel
		f.mu.Unlock()
		cmd := exec.CommandContext(one, E.Kubectl, append(args, ports...)...)
		_ = cmd.Run() // ends when the pod goes away (or restart); start again
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restart starts pod's port-forward again, for a pod that was replaced:
// kubectl does not always notice that its pod is gone.
func (f *forwards) restart(pod string) {
	GinkgoHelper()
	f.mu.Lock()
	if c := f.current[pod]; c != nil {
		c()
	}
	f.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	f.waitListening([]string{pod}, time.Minute)
}

func (f *forwards) stop() {
	f.cancel()
	f.wg.Wait()
}

// endpoints are the local client addresses of every member, in pod order.
func (f *forwards) endpoints() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.pods))
	for _, p := range f.pods {
		out = append(out, f.addrs[p][0])
	}
	return out
}

func (f *forwards) addr(pod string) [2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrs[pod]
}

// clientAddr and adminAddr are the local addresses of one pod's ports.
func (f *forwards) clientAddr(pod string) string { return f.addr(pod)[0] }
func (f *forwards) adminAddr(pod string) string  { return f.addr(pod)[1] }
