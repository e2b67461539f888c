package replication_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
)

// servedSerial is the serial of the certificate served at addr over TLS.
func servedSerial(addr string, cfg *tls.Config) (int64, error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

// Setting: three members under mutual TLS with a short-lived member
// certificate (valid for 3 minutes, as cert-manager's short durations in
// e2e), --tls-refresh-interval=1s. The certificate and key files are
// replaced in place (by rename, as the kubelet updates a Secret's volume)
// with a new certificate of another serial while the bank and insert
// workload runs over TLS.
// Invariants: without a restart (same pids) every port of every member
// (client, admin, replication, metrics) serves the new certificate within
// seconds; writes keep being acknowledged across the renewal; no
// acknowledged write is lost, the bank total is kept and histories are
// linearizable.
func TestTLSCertificateRenewalWithoutRestartUnderLoad(t *testing.T) {
	ca := testca.New(t, "cluster")
	issue := func(serial int64) testca.Pair {
		spec := testca.Loopback("member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		spec.URIs = []string{testca.ID("member")}
		spec.Serial = serial
		spec.NotBefore, spec.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(3*time.Minute)
		return ca.Issue(t, spec)
	}
	const first, second = 1001, 2002
	member := issue(first)
	operator := ca.ClientConfig(t)
	cl := startCluster(t, clusterOptions{members: 3, tls: operator, memberArgs: func(int) []string {
		return []string{"--tls-cert=" + member.CertFile, "--tls-key=" + member.KeyFile, "--tls-ca=" + ca.CAFile,
			"--tls-refresh-interval=1s"}
	}})
	leader := elect(t, cl)
	w := newClusterWorkload(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(2, 1, 2, 23)

	ports := func(m *testserver.Member) []string {
		return []string{m.ClientAddr, m.AdminAddr, m.ReplAddr, m.MetricsAddr}
	}
	pids := map[int]int{}
	for _, m := range cl.c.Members {
		pids[m.ID] = m.Pid()
		for _, addr := range ports(m) {
			if s, err := servedSerial(addr, operator); err != nil || s != first {
				t.Fatalf("member %d at %s serves serial %d (%v) before the renewal, want %d", m.ID, addr, s, err, first)
			}
		}
	}
	acked := w.Acked()
	renewed := time.Now()
	if p := issue(second); p.CertFile != member.CertFile || p.KeyFile != member.KeyFile {
		t.Fatalf("the renewed certificate went to %s, not over %s", p.CertFile, member.CertFile)
	}
	for _, m := range cl.c.Members {
		for _, addr := range ports(m) {
			var s int64
			var err error
			for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if s, err = servedSerial(addr, operator); err == nil && s == second {
					break
				}
			}
			if err != nil || s != second {
				t.Fatalf("member %d at %s still serves serial %d (%v) 15 s after the renewal", m.ID, addr, s, err)
			}
		}
	}
	t.Logf("every port serves the renewed certificate %v after the files changed", time.Since(renewed))
	for i := 0; w.Acked() < acked+100; i++ {
		if i > 400 {
			t.Fatalf("writes stopped across the renewal (%d before, %d now)", acked, w.Acked())
		}
		time.Sleep(25 * time.Millisecond)
	}
	for _, m := range cl.c.Members {
		if m.Pid() != pids[m.ID] || !m.Running() {
			t.Fatalf("member %d restarted (pid %d, was %d)", m.ID, m.Pid(), pids[m.ID])
		}
	}
	w.Stop()
	t.Log(w.check(cl, leader))
}
