package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// scrape fetches /metrics of m and parses it with the Prometheus text parser.
func scrape(t testing.TB, m *testserver.Member) map[string]*dto.MetricFamily {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, body, err := m.MetricsGet(ctx, "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}

// metricValue returns the value of the sample of family name whose labels
// include want (summed over the matching samples); -1 if none matches.
func metricValue(t testing.TB, m *testserver.Member, name string, want map[string]string) float64 {
	t.Helper()
	return sampleSum(scrape(t, m), name, want)
}

func sampleSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	sum, found := 0.0, false
next:
	for _, mt := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range mt.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case mt.GetCounter() != nil:
			sum += mt.GetCounter().GetValue()
		case mt.GetGauge() != nil:
			sum += mt.GetGauge().GetValue()
		case mt.GetHistogram() != nil:
			sum += float64(mt.GetHistogram().GetSampleCount())
		case mt.GetUntyped() != nil:
			sum += mt.GetUntyped().GetValue()
		}
	}
	if !found {
		return -1
	}
	return sum
}

func TestMetricsExposeTheDocumentedFamiliesWithTypes(t *testing.T) {
	m, _ := standalone(t)
	fams := scrape(t, m)
	want := map[string]dto.MetricType{
		"rolis_commits_total":       dto.MetricType_COUNTER,
		"rolis_aborts_total":        dto.MetricType_COUNTER,
		"rolis_requests_total":      dto.MetricType_COUNTER,
		"rolis_txn_latency_seconds": dto.MetricType_HISTOGRAM,
		"rolis_inflight_txns":       dto.MetricType_GAUGE,
		"rolis_open_txns":           dto.MetricType_GAUGE,
		"rolis_role":                dto.MetricType_GAUGE,
		"rolis_epoch":               dto.MetricType_GAUGE,
		"rolis_build_info":          dto.MetricType_GAUGE,
		// The standard process metrics, under their standard names.
		"process_cpu_seconds_total":     dto.MetricType_COUNTER,
		"process_resident_memory_bytes": dto.MetricType_GAUGE,
		"process_virtual_memory_bytes":  dto.MetricType_GAUGE,
		"process_open_fds":              dto.MetricType_GAUGE,
		"process_max_fds":               dto.MetricType_GAUGE,
		"process_start_time_seconds":    dto.MetricType_GAUGE,
	}
	for name, typ := range want {
		f, ok := fams[name]
		if !ok {
			t.Errorf("metric %s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s has type %v, want %v", name, f.GetType(), typ)
		}
	}
	if v := sampleSum(fams, "rolis_role", map[string]string{"role": "standalone"}); v != 1 {
		t.Errorf("rolis_role{role=standalone} = %v, want 1", v)
	}
	if v := sampleSum(fams, "process_resident_memory_bytes", nil); v <= 0 {
		t.Errorf("process_resident_memory_bytes = %v", v)
	}
	if v := sampleSum(fams, "process_open_fds", nil); v <= 3 {
		t.Errorf("process_open_fds = %v", v)
	}
	// Dropped: duplicates of the process metrics, and raw commit timestamps.
	for _, gone := range []string{"rolis_memory_bytes", "rolis_watermark_ts", "rolis_stream_committed_ts"} {
		if _, ok := fams[gone]; ok {
			t.Errorf("metric %s is still exported", gone)
		}
	}
	for _, reason := range []string{"conflict", "condition", "client", "expired"} {
		if v := sampleSum(fams, "rolis_aborts_total", map[string]string{"reason": reason}); v != 0 {
			t.Errorf("rolis_aborts_total{reason=%s} = %v on a new server, want 0", reason, v)
		}
	}
}

func TestMetricsCountersMoveWithLoad(t *testing.T) {
	m, cl := standalone(t)
	ctx := ctxFor(t, 30*time.Second)
	before := scrape(t, m)
	commits0 := sampleSum(before, "rolis_commits_total", nil)
	execOK0 := sampleSum(before, "rolis_requests_total", map[string]string{"method": "Execute", "code": "OK"})
	lat0 := sampleSum(before, "rolis_txn_latency_seconds", map[string]string{"api": "execute"})
	const n = 200
	for i := 0; i < n; i++ {
		mustPut(t, cl, "m"+strings.Repeat("x", i%7)+string(rune('a'+i%26)), "v")
	}
	// A PUT_IF that fails counts as an abort for "condition".
	cl.Execute(ctx, client.PutIf([]byte("nope"), []byte("v"), []byte("other")))
	// An interactive transaction: open gauge, then an abort by the client.
	tx, err := cl.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mid := scrape(t, m)
	if v := sampleSum(mid, "rolis_open_txns", nil); v != 1 {
		t.Errorf("rolis_open_txns with one open transaction = %v", v)
	}
	tx.Rollback(ctx)

	after := scrape(t, m)
	if d := sampleSum(after, "rolis_commits_total", nil) - commits0; d < n {
		t.Errorf("rolis_commits_total moved by %v after %d commits", d, n)
	}
	if d := sampleSum(after, "rolis_requests_total", map[string]string{"method": "Execute", "code": "OK"}) - execOK0; d < n {
		t.Errorf(`rolis_requests_total{method="Execute",code="OK"} moved by %v after %d calls`, d, n)
	}
	if lat0 < 0 {
		lat0 = 0
	}
	if d := sampleSum(after, "rolis_txn_latency_seconds", map[string]string{"api": "execute"}) - lat0; d < n {
		t.Errorf("rolis_txn_latency_seconds{api=execute} count moved by %v after %d calls", d, n)
	}
	if v := sampleSum(after, "rolis_aborts_total", map[string]string{"reason": "condition"}); v < 1 {
		t.Errorf("rolis_aborts_total{reason=condition} = %v", v)
	}
	if v := sampleSum(after, "rolis_aborts_total", map[string]string{"reason": "client"}); v < 1 {
		t.Errorf("rolis_aborts_total{reason=client} = %v", v)
	}
	if v := sampleSum(after, "rolis_open_txns", nil); v != 0 {
		t.Errorf("rolis_open_txns after rollback = %v", v)
	}
	// The watermark is the Unix time of the last commit on one node.
	if age := float64(time.Now().UnixNano())/1e9 - sampleSum(after, "rolis_watermark_timestamp_seconds", nil); age < -0.1 || age > 30 {
		t.Errorf("rolis_watermark_timestamp_seconds is %.3f s old after commits", age)
	}
	if v := sampleSum(after, "rolis_replication_lag_seconds", nil); v != 0 {
		t.Errorf("rolis_replication_lag_seconds = %v on one node", v)
	}
	// The histogram's buckets are cumulative and end at +Inf = count.
	h := after["rolis_txn_latency_seconds"]
	for _, mt := range h.GetMetric() {
		hist := mt.GetHistogram()
		prev := uint64(0)
		for _, b := range hist.GetBucket() {
			if b.GetCumulativeCount() < prev {
				t.Errorf("bucket le=%v not cumulative", b.GetUpperBound())
			}
			prev = b.GetCumulativeCount()
		}
		if prev > hist.GetSampleCount() {
			t.Errorf("buckets exceed the count: %d > %d", prev, hist.GetSampleCount())
		}
	}
}

func TestHealthAndReadinessEndpoints(t *testing.T) {
	m, _ := standalone(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, path := range []string{"/healthz", "/readyz"} {
		code, _, err := testserver.HTTPGet(ctx, m.MetricsAddr, path)
		if err != nil || code != http.StatusOK {
			t.Errorf("%s: %d %v", path, code, err)
		}
	}
}
