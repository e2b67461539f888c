package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// issue writes a server certificate (127.0.0.1, localhost) or a client
// certificate (identity client/NAME) of the given serial as NAME.crt and
// NAME.key in ca's dir.
func issue(t *testing.T, ca *testca.CA, name string, serial int64, server bool) (certFile, keyFile string) {
	t.Helper()
	spec := testca.Spec{Name: name, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs: []string{testca.ID("client/" + name)}}
	if server {
		spec = testca.Loopback(name, x509.ExtKeyUsageServerAuth)
	}
	spec.Serial = serial
	p := ca.Issue(t, spec)
	return p.CertFile, p.KeyFile
}

// servedSerial dials addr with TLS and returns the serial of the server's
// certificate.
func servedSerial(t *testing.T, addr string, cfg *tls.Config) (int64, error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

func tlsClient(t *testing.T, addr string, caFile, certFile, keyFile string) *client.Client {
	return newClient(t, addr, func(c *client.Config) { c.CAFile, c.CertFile, c.KeyFile = caFile, certFile, keyFile })
}

func TestTLS_ClientTrustingTheCAIsServed_WrongCAAndPlaintextAreRefused(t *testing.T) {
	ca, other := testca.New(t, "right"), testca.New(t, "wrong")
	cert, key := issue(t, ca, "server", 10, true)
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + cert, "--tls-key=" + key},
		ProbeTLS: &tls.Config{RootCAs: ca.Pool()},
	})
	m := c.Member(1)
	ctx := ctxFor(t, 30*time.Second)

	good := tlsClient(t, m.ClientAddr, ca.CAFile, "", "")
	mustPut(t, good, "secret", "v")
	if v, _ := mustGet(t, good, "secret"); v != "v" {
		t.Fatalf("get over TLS = %q", v)
	}
	adm, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, CAFile: ca.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.Status(ctx, ""); err != nil {
		t.Fatalf("admin Status over TLS: %v", err)
	}

	wrong := tlsClient(t, m.ClientAddr, other.CAFile, "", "")
	if _, _, err := wrong.Get(ctx, []byte("secret")); err == nil {
		t.Fatal("a client trusting another CA was served")
	} else {
		t.Logf("wrong CA refused: %v", err)
	}
	plain := newClient(t, m.ClientAddr)
	if _, _, err := plain.Get(ctx, []byte("secret")); err == nil {
		t.Fatal("a plaintext client was served by a TLS server")
	}
	if _, err := servedSerial(t, m.ClientAddr, &tls.Config{RootCAs: other.Pool()}); err == nil {
		t.Fatal("TLS handshake verified against the wrong CA")
	}
	mustPut(t, good, "after", "refusals") // still serving

	// The metrics port serves HTTPS with the same certificate under TLS
	// (--metrics-tls=auto; docs/operations.md, "Security model"), without a
	// client certificate (kubelet probes and Prometheus present none), and
	// no plain HTTP.
	fams := scrape(t, m)
	if _, ok := fams["rolis_commits_total"]; !ok {
		t.Error("HTTPS /metrics of a TLS server lacks rolis_commits_total")
	}
	if s, err := servedSerial(t, m.MetricsAddr, &tls.Config{RootCAs: ca.Pool()}); err != nil || s != 10 {
		t.Errorf("the metrics port's TLS handshake: serial %d, %v; want the server certificate (10)", s, err)
	}
	if _, _, err := testserver.HTTPGet(ctxFor(t, 10*time.Second), m.MetricsAddr, "/healthz"); err == nil {
		t.Error("the metrics port of a TLS server answered plain HTTP")
	}
	if _, _, err := testserver.HTTPSGet(ctxFor(t, 10*time.Second), m.MetricsAddr, "/healthz",
		&tls.Config{RootCAs: other.Pool()}); err == nil {
		t.Error("the metrics port's certificate verified against another CA")
	}
}

// --metrics-tls=off keeps the metrics port plain HTTP under TLS.
func TestTLS_MetricsTLSOffServesPlainHTTP(t *testing.T) {
	ca := testca.New(t, "right")
	cert, key := issue(t, ca, "server", 10, true)
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + cert, "--tls-key=" + key, "--metrics-tls=off"},
		ProbeTLS: &tls.Config{RootCAs: ca.Pool()},
	})
	m := c.Member(1)
	if code, _, err := testserver.HTTPGet(ctxFor(t, 10*time.Second), m.MetricsAddr, "/readyz"); err != nil ||
		code != 200 {
		t.Fatalf("plain HTTP /readyz with --metrics-tls=off: %d %v", code, err)
	}
}

func TestMTLS_ClientCertificateRequiredAndVerified(t *testing.T) {
	ca, other := testca.New(t, "right"), testca.New(t, "wrong")
	scert, skey := issue(t, ca, "server", 10, true)
	ccert, ckey := issue(t, ca, "client", 11, false)
	ocert, okey := issue(t, other, "intruder", 12, false)
	probeCert, err := tls.LoadX509KeyPair(ccert, ckey)
	if err != nil {
		t.Fatal(err)
	}
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + scert, "--tls-key=" + skey, "--tls-ca=" + ca.CAFile},
		ProbeTLS: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{probeCert}},
	})
	m := c.Member(1)
	ctx := ctxFor(t, 30*time.Second)

	good := tlsClient(t, m.ClientAddr, ca.CAFile, ccert, ckey)
	mustPut(t, good, "k", "v")

	noCert := tlsClient(t, m.ClientAddr, ca.CAFile, "", "")
	if err := noCert.Put(ctx, []byte("k"), []byte("nocert")); err == nil {
		t.Fatal("a client without a certificate was served under mTLS")
	} else {
		t.Logf("no client certificate refused: %v", err)
	}
	intruder := tlsClient(t, m.ClientAddr, ca.CAFile, ocert, okey)
	if err := intruder.Put(ctx, []byte("k"), []byte("intruder")); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
	adminNoCert, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, CAFile: ca.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	defer adminNoCert.Close()
	if _, err := adminNoCert.Status(ctx, ""); err == nil {
		t.Fatal("the admin API served a client without a certificate under mTLS")
	}
	if v, _ := mustGet(t, good, "k"); v != "v" {
		t.Fatalf("k = %q after refused writes", v)
	}
}

// The server checks its certificate files every --tls-refresh-interval and
// serves a rotated certificate on new connections without a restart.
func TestTLSCertificateRotationIsPickedUpWithoutRestart(t *testing.T) {
	ca := testca.New(t, "rotating")
	cert, key := issue(t, ca, "server", 100, true)
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + cert, "--tls-key=" + key, "--tls-refresh-interval=1s"},
		ProbeTLS: &tls.Config{RootCAs: ca.Pool()},
	})
	m := c.Member(1)
	cfg := &tls.Config{RootCAs: ca.Pool()}
	if s, err := servedSerial(t, m.ClientAddr, cfg); err != nil || s != 100 {
		t.Fatalf("initial serial %d, %v", s, err)
	}
	pid := m.Pid()
	// Rotate: new key and certificate (key first, as a rename-based rotation
	// would leave them briefly mismatched either way).
	if c, k := issue(t, ca, "server", 200, true); c != cert || k != key {
		t.Fatalf("the new certificate went to %s and %s, not over %s and %s", c, k, cert, key)
	}
	deadline := time.Now().Add(15 * time.Second)
	var last int64
	for time.Now().Before(deadline) {
		s, err := servedSerial(t, m.ClientAddr, cfg)
		if err == nil && s == 200 {
			break
		}
		last = s
		time.Sleep(200 * time.Millisecond)
	}
	if s, err := servedSerial(t, m.ClientAddr, cfg); err != nil || s != 200 {
		t.Fatalf("after rotation the server still serves serial %d (last %d), %v", s, last, err)
	}
	if m.Pid() != pid || !m.Running() {
		t.Fatal("the server restarted")
	}
	cl := tlsClient(t, m.ClientAddr, ca.CAFile, "", "")
	mustPut(t, cl, "rotated", "yes")
}
