package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// distribution is "min / p50 / p90 / max" of ds (nearest rank).
func distribution(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration { return s[max(0, (p*len(s)+99)/100-1)] }
	r := func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
	return fmt.Sprintf("min %s / p50 %s / p90 %s / max %s (n=%d)", r(s[0]), r(rank(50)), r(rank(90)), r(s[len(s)-1]), len(s))
}

func (d *database) gaps() []time.Duration {
	var out []time.Duration
	for _, f := range d.failovers {
		out = append(out, f.gap)
	}
	return out
}

var _ = Describe("Failover distribution", func() {
	It("leader pod deleted again and again under load: the failover gap's distribution", Label("chaos", "leader-delete-repeat"), func() {
		runs, err := strconv.Atoi(getenv("E2E_REPEAT", "10"))
		Expect(err).NotTo(HaveOccurred(), "E2E_REPEAT")
		Expect(runs).To(BeNumerically(">=", 1))
		d := loadedSample("e2e-repeat", 12)
		for i := range runs {
			var uid string
			old := d.loseLeader(fmt.Sprintf("run %d/%d: deleting the leader pod", i+1, runs), func(pod string) {
				uid = podUID(d.ns, pod)
				must(time.Minute, "-n", d.ns, "delete", "pod", pod, "--wait=false")
			})
			// So far, in case a later run fails.
			GinkgoWriter.Printf("after run %d: failover gap %s\n", i+1, distribution(d.gaps()))
			d.rejoin(old, uid)
		}
		var elected []time.Duration
		for _, f := range d.failovers {
			elected = append(elected, f.elected)
		}
		GinkgoWriter.Printf("failover gap (fault to writes served again): %s\n", distribution(d.gaps()))
		GinkgoWriter.Printf("new leader reported after: %s\n", distribution(elected))
		GinkgoWriter.Printf("every gap: %v\n", d.gaps())
		AddReportEntry("failover gap distribution", distribution(d.gaps()))
		AddReportEntry("new leader distribution", distribution(elected))
		d.verify()
	})
})
