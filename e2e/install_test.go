package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
)

var _ = Describe("Install", Label("quick", "install"), func() {
	It("helm-installed operator makes the sample Ready with a leader, and the client Service reaches it", func() {
		out := must(time.Minute, "-n", operatorNS, "get", "deployment", operatorRelease,
			"-o", "jsonpath={.status.readyReplicas}/{.spec.replicas}")
		GinkgoWriter.Println("operator pods ready:", out)
		Expect(strings.HasPrefix(out, "0/")).To(BeFalse())

		d := createSample("e2e-install")
		c := d.cluster()
		By("status: " + describe(c))
		Expect(c.Status.Epoch).To(BeNumerically(">=", 1))
		Expect(c.Status.Watermark).NotTo(BeNil())
		Expect(c.Status.ReadyReplicas).To(Equal(c.Spec.Replicas))

		// Exactly the leader carries role=leader, which the client Service selects.
		labelled := must(30*time.Second, "-n", d.ns, "get", "pods", "-l", specs.LabelRole+"=leader", "-o", "name")
		Expect(strings.Fields(labelled)).To(Equal([]string{"pod/" + c.Status.Leader}))
		st, err := d.status(c.Status.Leader)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.GetRole()).To(Equal(rolisv1.Role_LEADER))

		By("a write and a read through the client Service, with no redirect")
		port := freePort()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		pf := exec.CommandContext(ctx, E.Kubectl, "--context", E.Context, "-n", d.ns, "port-forward",
			"--address", "127.0.0.1", "svc/"+d.name, fmt.Sprintf("%d:%d", port, specs.ClientPort))
		Expect(pf.Start()).To(Succeed())
		defer func() { cancel(); _ = pf.Wait() }()
		cl, err := client.New(context.Background(), client.Config{Endpoints: []string{fmt.Sprintf("127.0.0.1:%d", port)}, MaxRedirects: -1})
		Expect(err).NotTo(HaveOccurred())
		defer cl.Close()
		Eventually(func() error {
			pctx, pcancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer pcancel()
			return cl.Put(pctx, []byte("e2e/greeting"), []byte("hello"))
		}).WithTimeout(30 * time.Second).WithPolling(300 * time.Millisecond).Should(Succeed())
		gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer gcancel()
		v, found, err := cl.Get(gctx, []byte("e2e/greeting"))
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(string(v)).To(Equal("hello"))
	})
})
