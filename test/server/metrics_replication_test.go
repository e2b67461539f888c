package server_test

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// watermarkAge is how old member m's rolis_watermark_timestamp_seconds is
// (now minus it), and whether it has a sample.
func watermarkAge(t *testing.T, fams map[string]*dto.MetricFamily) (float64, bool) {
	t.Helper()
	v := sampleSum(fams, "rolis_watermark_timestamp_seconds", nil)
	if v < 0 {
		return 0, false
	}
	return float64(time.Now().UnixNano())/1e9 - v, true
}

// The replication metrics of three real members (docs/operations.md,
// "Metrics"): every member has a lag in seconds per stream (0 on the
// leader, small on a follower that keeps up) and the watermark as Unix
// seconds, fresh on every member while the leader runs and stalling on
// the followers while the leader is stopped.
func TestReplicationLagAndWatermarkAreSecondsOnEveryMember(t *testing.T) {
	// An election timeout longer than the pause: the paused leader stays the leader.
	c := testserver.Start(t, testserver.Options{Members: 3, Args: []string{
		"--election=builtin", "--election-timeout=6s", "--worker-threads=2"}})
	admin, err := client.NewAdmin(context.Background(), client.Config{Endpoints: c.AdminAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var leader *testserver.Member
	for deadline := time.Now().Add(60 * time.Second); leader == nil && time.Now().Before(deadline); {
		for _, m := range c.Members {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := admin.Status(ctx, m.AdminAddr)
			cancel()
			if err == nil && st.GetRole() == rolisv1.Role_LEADER {
				leader = m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader within 60s")
	}
	cl := newClient(t, leader.ClientAddr)
	for i := 0; i < 200; i++ {
		mustPut(t, cl, "lag"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
	}

	// Every member: a lag per stream, known once it replayed the epoch,
	// and a fresh watermark.
	var followers []*testserver.Member
	for _, m := range c.Members {
		if m != leader {
			followers = append(followers, m)
		}
		var fams map[string]*dto.MetricFamily
		ok := false
		for deadline := time.Now().Add(20 * time.Second); !ok && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			fams = scrape(t, m)
			_, known := watermarkAge(t, fams)
			ok = known && len(fams["rolis_replication_lag_seconds"].GetMetric()) == 2
		}
		if !ok {
			t.Fatalf("member %d: no watermark or not 2 stream lags within 20s", m.ID)
		}
		for _, s := range fams["rolis_replication_lag_seconds"].GetMetric() {
			lag := s.GetGauge().GetValue()
			if m == leader && lag != 0 {
				t.Errorf("leader: lag %v, want 0", lag)
			}
			if lag < 0 || lag > 5 {
				t.Errorf("member %d: lag %v s", m.ID, lag)
			}
		}
		age, _ := watermarkAge(t, fams)
		t.Logf("member %d (leader %v): watermark %.3f s old, lags %v", m.ID, m == leader, age, fams["rolis_replication_lag_seconds"].GetMetric())
		if age < -0.5 || age > 5 {
			t.Errorf("member %d: watermark %.3f s old while the leader runs", m.ID, age)
		}
	}

	// The leader stopped: the followers' G stops with it.
	if err := leader.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	for _, f := range followers {
		age, ok := watermarkAge(t, scrape(t, f))
		t.Logf("member %d: watermark %.3f s old with the leader stopped for 3 s", f.ID, age)
		if !ok || age < 2.5 {
			t.Errorf("member %d: watermark %.3f s old (known %v) with the leader stopped for 3 s", f.ID, age, ok)
		}
	}
	if err := leader.Resume(); err != nil {
		t.Fatal(err)
	}
	mustPut(t, cl, "after", "resume")
	for _, f := range followers {
		age := 0.0
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if age, _ = watermarkAge(t, scrape(t, f)); age < 1 {
				break
			}
		}
		if age >= 1 {
			t.Errorf("member %d: watermark still %.3f s old after the leader came back", f.ID, age)
		}
	}
}
