package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// promQuery runs an instant query against the Prometheus of the monitoring
// add-on (through the API server's service proxy) and returns the value of
// each series by its pod label.
func promQuery(q string) (map[string]float64, error) {
	out, err := kubectl(30*time.Second, "get", "--raw",
		"/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query?query="+url.QueryEscape(q))
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var r struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, err
	}
	res := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		res[s.Metric["pod"]] = v
	}
	return res, nil
}

var _ = Describe("Observability and tests of the chart", func() {
	It("Prometheus scrapes every member and the commit counter moves under load", Label("monitoring"), func() {
		d := createSample("e2e-metrics")
		q := fmt.Sprintf(`sum by (pod) (rolis_commits_total{namespace=%q})`, d.ns)
		var before map[string]float64
		Eventually(func(g Gomega) {
			var err error
			before, err = promQuery(fmt.Sprintf(`up{namespace=%q}`, d.ns))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(before).To(HaveLen(len(d.pods)))
			for p, up := range before {
				g.Expect(up).To(Equal(1.0), p)
			}
			before, err = promQuery(q)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		leader := d.cluster().Status.Leader
		d.startLoad(5)
		d.writesFlowing(30 * time.Second)
		Eventually(func(g Gomega) {
			now, err := promQuery(q)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now[leader]).To(BeNumerically(">", before[leader]+10), "commits of the leader %s", leader)
		}).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		d.verify()
	})

	It("helm test passes (a RolisCluster of its own becomes Ready)", Label("quick", "helm-test"), func() {
		start := time.Now()
		out, err := helm(10*time.Minute, "test", operatorRelease, "-n", operatorNS, "--timeout", "8m")
		GinkgoWriter.Println(out)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("helm test passed in %v\n", time.Since(start).Round(time.Second))
	})
})
