package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	dir   string
	cert  *x509.Certificate
	key   *ecdsa.PrivateKey
	pem   []byte
	file  string
	label string
}

func newCA(t *testing.T, label string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: label + " test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{dir: t.TempDir(), cert: cert, key: key, label: label,
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	ca.file = filepath.Join(ca.dir, "ca.pem")
	writeFile(t, ca.file, ca.pem)
	return ca
}

// issue writes a certificate and key signed by ca as NAME.crt, NAME.key.
func (ca *testCA) issue(t *testing.T, name string, serial int64, server bool) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := ca.issuePEM(t, name, serial, server)
	certFile, keyFile = filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	writeFile(t, keyFile, keyPEM)
	writeFile(t, certFile, certPEM)
	return certFile, keyFile
}

func (ca *testCA) issuePEM(t *testing.T, name string, serial int64, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// writeFile replaces path atomically (as a rotation by rename would).
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
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
	ca, other := newCA(t, "right"), newCA(t, "wrong")
	cert, key := ca.issue(t, "server", 10, true)
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + cert, "--tls-key=" + key},
		ProbeTLS: &tls.Config{RootCAs: ca.pool()},
	})
	m := c.Member(1)
	ctx := ctxFor(t, 30*time.Second)

	good := tlsClient(t, m.ClientAddr, ca.file, "", "")
	mustPut(t, good, "secret", "v")
	if v, _ := mustGet(t, good, "secret"); v != "v" {
		t.Fatalf("get over TLS = %q", v)
	}
	adm, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, CAFile: ca.file})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.Status(ctx, ""); err != nil {
		t.Fatalf("admin Status over TLS: %v", err)
	}

	wrong := tlsClient(t, m.ClientAddr, other.file, "", "")
	if _, _, err := wrong.Get(ctx, []byte("secret")); err == nil {
		t.Fatal("a client trusting another CA was served")
	} else {
		t.Logf("wrong CA refused: %v", err)
	}
	plain := newClient(t, m.ClientAddr)
	if _, _, err := plain.Get(ctx, []byte("secret")); err == nil {
		t.Fatal("a plaintext client was served by a TLS server")
	}
	if _, err := servedSerial(t, m.ClientAddr, &tls.Config{RootCAs: other.pool()}); err == nil {
		t.Fatal("TLS handshake verified against the wrong CA")
	}
	mustPut(t, good, "after", "refusals") // still serving

	// The metrics port stays plain HTTP under TLS (docs/operations.md, TLS:
	// Prometheus scrapes it inside the cluster; it carries no data and no
	// control). Checked so that a change of it is a decision, not an accident.
	fams := scrape(t, m)
	if _, ok := fams["rolis_commits_total"]; !ok {
		t.Error("plain-HTTP /metrics of a TLS server lacks rolis_commits_total")
	}
	if _, err := servedSerial(t, m.MetricsAddr, &tls.Config{RootCAs: ca.pool()}); err == nil {
		t.Error("the metrics port answered a TLS handshake; update docs/operations.md (TLS) if this is intended")
	}
}

func TestMTLS_ClientCertificateRequiredAndVerified(t *testing.T) {
	ca, other := newCA(t, "right"), newCA(t, "wrong")
	scert, skey := ca.issue(t, "server", 10, true)
	ccert, ckey := ca.issue(t, "client", 11, false)
	ocert, okey := other.issue(t, "intruder", 12, false)
	probeCert, err := tls.LoadX509KeyPair(ccert, ckey)
	if err != nil {
		t.Fatal(err)
	}
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + scert, "--tls-key=" + skey, "--tls-ca=" + ca.file},
		ProbeTLS: &tls.Config{RootCAs: ca.pool(), Certificates: []tls.Certificate{probeCert}},
	})
	m := c.Member(1)
	ctx := ctxFor(t, 30*time.Second)

	good := tlsClient(t, m.ClientAddr, ca.file, ccert, ckey)
	mustPut(t, good, "k", "v")

	noCert := tlsClient(t, m.ClientAddr, ca.file, "", "")
	if err := noCert.Put(ctx, []byte("k"), []byte("nocert")); err == nil {
		t.Fatal("a client without a certificate was served under mTLS")
	} else {
		t.Logf("no client certificate refused: %v", err)
	}
	intruder := tlsClient(t, m.ClientAddr, ca.file, ocert, okey)
	if err := intruder.Put(ctx, []byte("k"), []byte("intruder")); err == nil {
		t.Fatal("a client certificate of another CA was accepted")
	}
	adminNoCert, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, CAFile: ca.file})
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
	ca := newCA(t, "rotating")
	cert, key := ca.issue(t, "server", 100, true)
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + cert, "--tls-key=" + key, "--tls-refresh-interval=1s"},
		ProbeTLS: &tls.Config{RootCAs: ca.pool()},
	})
	m := c.Member(1)
	cfg := &tls.Config{RootCAs: ca.pool()}
	if s, err := servedSerial(t, m.ClientAddr, cfg); err != nil || s != 100 {
		t.Fatalf("initial serial %d, %v", s, err)
	}
	pid := m.Pid()
	// Rotate: new key and certificate (key first, as a rename-based rotation
	// would leave them briefly mismatched either way).
	certPEM, keyPEM := ca.issuePEM(t, "server", 200, true)
	writeFile(t, key, keyPEM)
	writeFile(t, cert, certPEM)
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
	cl := tlsClient(t, m.ClientAddr, ca.file, "", "")
	mustPut(t, cl, "rotated", "yes")
}
