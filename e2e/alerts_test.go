package e2e

// The chart's alerts and dashboard against the live Prometheus of the
// prometheus-operator add-on (hack/kind/addon-prometheus-operator.sh,
// docs/e2e.md): the PrometheusRule loaded and evaluated, every query valid,
// the members' ServiceMonitor scraped over HTTPS, and RolisFailover firing
// and resolving around a leader kill. Part of `make e2e-full`.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// alertsFailoverWindow is the chart's alerts.failoverWindow when the suite
// installs it beside the prometheus-operator (installOperator): how long
// RolisFailover fires after a failover.
const alertsFailoverWindow = "2m"

// eventMetrics are series that appear only after what they count has
// happened once (no reconcile step fails on a healthy cluster); every other
// metric the chart's queries name must have series.
var eventMetrics = []string{"rolis_operator_reconcile_errors_total"}

var metricName = regexp.MustCompile(`\b((?:rolis|process|certmanager)_[a-z_]+)`)

// metricNames are the metric names a query mentions (histogram buckets by
// their _bucket series); rolis_cluster is the label.
func metricNames(q string) []string {
	var out []string
	for _, m := range metricName.FindAllStringSubmatch(q, -1) {
		if m[1] != "rolis_cluster" && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// chartAlerts are the alerting rules of the chart's PrometheusRule as the
// API server holds it: name -> expression.
func chartAlerts() map[string]string {
	GinkgoHelper()
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	out := must(30*time.Second, "-n", operatorNS, "get", "prometheusrules.monitoring.coreos.com",
		operatorRelease+"-alerts", "-o", "json")
	Expect(json.Unmarshal([]byte(out), &pr)).To(Succeed())
	alerts := map[string]string{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts[r.Alert] = r.Expr
			}
		}
	}
	// As many as the chart's rule file has.
	file, err := os.ReadFile(filepath.Join(E.Root, "charts/rolis-operator/alerts/rolis-alerts.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(alerts).To(HaveLen(len(regexp.MustCompile(`(?m)^\s*- alert: `).FindAll(file, -1))), "alerts of the PrometheusRule")
	return alerts
}

// dashboardQueries are the queries of the chart's dashboards with their
// variables filled in for one cluster.
func dashboardQueries(ns, cluster string) []string {
	GinkgoHelper()
	files, err := filepath.Glob(filepath.Join(E.Root, "charts/rolis-operator/dashboards/*.json"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	fill := strings.NewReplacer("$namespace", ns, "$cluster", cluster, "$__rate_interval", "1m")
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok {
				out = append(out, fill.Replace(e))
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		var v any
		Expect(json.Unmarshal(data, &v)).To(Succeed(), f)
		walk(v)
	}
	// The variables' label_values(rolis_build_info...) (Grafana's, not PromQL).
	out = append(out, fmt.Sprintf(`group by (namespace, rolis_cluster) (rolis_build_info{namespace=%q})`, ns))
	sort.Strings(out)
	return out
}

var _ = Describe("Alerts and dashboards on the live Prometheus", Label("alerts"), Ordered, func() {
	var ns string
	BeforeAll(func() {
		_, err := kubectl(30*time.Second, "-n", "monitoring", "get", "prometheuses.monitoring.coreos.com", "rolis")
		Expect(err).NotTo(HaveOccurred(), "the prometheus-operator and its Prometheus must run (hack/kind/addon-prometheus-operator.sh; make e2e-full does it)")
		_, err = kubectl(30*time.Second, "get", "crd", "certificates.cert-manager.io")
		Expect(err).NotTo(HaveOccurred(), "cert-manager must be installed (hack/kind/addon-cert-manager.sh; make e2e-full does it)")
		ns = newNamespace("e2e-alerts")
		// The sample as users apply it (TLS by default), monitored: its
		// NetworkPolicy admits the scrapes from namespace monitoring only.
		applySampleWith(ns, func(spec map[string]any) {
			spec["monitoring"] = map[string]any{"enabled": true, "interval": "10s", "namespaceSelector": map[string]any{
				"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
		})
		c := waitReady(ns, sampleName, 6*time.Minute)
		GinkgoWriter.Println(sampleName+":", describe(c))
	})

	It("scrapes every member over HTTPS through the cluster's ServiceMonitor, and the operator", func() {
		Eventually(func(g Gomega) {
			targets, err := promTargets()
			g.Expect(err).NotTo(HaveOccurred())
			members, operators := 0, 0
			for _, t := range targets {
				switch {
				case t.Labels["namespace"] == ns:
					members++
					g.Expect(t.ScrapeURL).To(HavePrefix("https://"), t.Labels["pod"])
					g.Expect(t.Health).To(Equal("up"), "%s: %s", t.Labels["pod"], t.LastError)
				case strings.Contains(t.ScrapePool, "/"+operatorNS+"/"+operatorRelease+"/"):
					operators++
					g.Expect(t.Health).To(Equal("up"), "operator %s: %s", t.Labels["pod"], t.LastError)
				}
			}
			g.Expect(members).To(Equal(3), "member targets")
			g.Expect(operators).To(BeNumerically(">", 0), "operator targets")
			up, err := promQuery(fmt.Sprintf(`up{namespace=%q, rolis_cluster=%q}`, ns, sampleName))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(up).To(HaveLen(3))
		}).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	})

	It("loaded every alert of the chart's PrometheusRule and evaluates it without error", func() {
		alerts := chartAlerts()
		Eventually(func(g Gomega) {
			rules, err := promAlertRules()
			g.Expect(err).NotTo(HaveOccurred())
			for name := range alerts {
				r, ok := rules[name]
				g.Expect(ok).To(BeTrue(), "alert %s loaded", name)
				g.Expect(r.LastEvaluation.IsZero()).To(BeFalse(), "alert %s evaluated", name)
				g.Expect(r.Health).To(Equal("ok"), "alert %s: %s", name, r.LastError)
			}
		}).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("%d alerts loaded and evaluated\n", len(alerts))
	})

	It("fires RolisFailover when the leader is killed, and resolves it after alerts.failoverWindow", func() {
		c := waitReady(ns, sampleName, time.Minute)
		firing := func() (bool, error) {
			alerts, err := promAlerts()
			for _, a := range alerts {
				if a.Labels["alertname"] == "RolisFailover" && a.Labels["namespace"] == ns &&
					a.Labels["rolis_cluster"] == sampleName && a.State == "firing" {
					return true, err
				}
			}
			return false, err
		}
		Expect(firing()).To(BeFalse(), "RolisFailover before any failover")
		By("kill -9 of the leader's rolisd " + c.Status.Leader)
		killed := time.Now()
		signalMember(ns, c.Status.Leader, "KILL")
		Eventually(func(g Gomega) {
			n, err := getCluster(ns, sampleName)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n.Status.Epoch).To(BeNumerically(">", c.Status.Epoch))
		}).WithTimeout(E.FailoverBound).WithPolling(time.Second).Should(Succeed(), "a new leader")
		Eventually(firing).WithTimeout(2*time.Minute).WithPolling(5*time.Second).Should(BeTrue(), "RolisFailover firing")
		fired := time.Since(killed)
		alerts, err := promAlerts()
		Expect(err).NotTo(HaveOccurred())
		for _, a := range alerts {
			if a.Labels["namespace"] == ns {
				GinkgoWriter.Printf("alert %s %s %v\n", a.Labels["alertname"], a.State, a.Labels)
			}
		}
		window, err := time.ParseDuration(alertsFailoverWindow)
		Expect(err).NotTo(HaveOccurred())
		Eventually(firing).WithTimeout(window+2*time.Minute).WithPolling(5*time.Second).Should(BeFalse(), "RolisFailover resolved")
		GinkgoWriter.Printf("RolisFailover fired %v after the kill and resolved %v after it\n",
			fired.Round(time.Second), time.Since(killed).Round(time.Second))
		AddReportEntry("RolisFailover fired after", fired.Round(time.Second).String())
		AddReportEntry("RolisFailover resolved after", time.Since(killed).Round(time.Second).String())
		waitReady(ns, sampleName, 3*time.Minute)
	})

	It("evaluates every dashboard query and alert expression without error; every metric they name has series", func() {
		queries := dashboardQueries(ns, sampleName)
		alerts := chartAlerts()
		for _, expr := range alerts {
			queries = append(queries, expr)
		}
		var names []string
		for _, q := range queries {
			for _, m := range metricNames(q) {
				if !slices.Contains(names, m) {
					names = append(names, m)
				}
			}
		}
		sort.Strings(names)
		Eventually(func(g Gomega) {
			for _, q := range queries {
				_, err := promInstant(q)
				g.Expect(err).NotTo(HaveOccurred(), q)
			}
			for _, m := range names {
				if slices.Contains(eventMetrics, m) {
					continue
				}
				// The members' series of this cluster, or the operator's
				// about it (namespace and rolis_cluster labels either way).
				s, err := promInstant(fmt.Sprintf(`count({__name__=%q, namespace=%q, rolis_cluster=%q})`, m, ns, sampleName))
				switch m {
				case "rolis_operator_failover_duration_seconds_bucket": // labelled by kind only
					s, err = promInstant(fmt.Sprintf(`count({__name__=%q})`, m))
				case "certmanager_certificate_expiration_timestamp_seconds": // cert-manager's, by certificate
					s, err = promInstant(fmt.Sprintf(`count({__name__=%q, namespace=%q})`, m, ns))
				}
				g.Expect(err).NotTo(HaveOccurred(), m)
				g.Expect(s).NotTo(BeEmpty(), "no series of %s", m)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(10 * time.Second).Should(Succeed())
		By("RolisCertificateExpiring, with a threshold of 100 years, matches the cluster's server and client certificates")
		expiring := regexp.MustCompile(`<\s*[0-9]+\s*\*\s*86400`).ReplaceAllString(alerts["RolisCertificateExpiring"], "< 36500 * 86400")
		Expect(expiring).NotTo(Equal(alerts["RolisCertificateExpiring"]), "the threshold of RolisCertificateExpiring")
		s, err := promInstant(expiring)
		Expect(err).NotTo(HaveOccurred(), expiring)
		var certs []string
		for _, v := range s {
			if v.Metric["namespace"] == ns {
				certs = append(certs, v.Metric["name"])
			}
		}
		Expect(certs).To(ConsistOf(sampleName+"-server", sampleName+"-client"), expiring)
		// What each query returns now (some are empty on a healthy cluster:
		// the alerts' conditions, aborts, errors).
		for _, q := range queries {
			s, err := promInstant(q)
			Expect(err).NotTo(HaveOccurred(), q)
			GinkgoWriter.Printf("%2d series  %s\n", len(s), strings.Join(strings.Fields(q), " "))
		}
		GinkgoWriter.Printf("%d queries, %d metric names (%d only after events: %v)\n", len(queries), len(names),
			len(eventMetrics), eventMetrics)
		AddReportEntry("queries evaluated", fmt.Sprint(len(queries)))
	})
})
