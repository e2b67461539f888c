// Package testca makes certificate authorities and certificates for tests
// that run real processes over TLS: a CA per test, and member certificates
// that serve and authenticate as a client (as cert-manager issues the
// members' certificate), valid for 127.0.0.1 and localhost, with the
// identities rolisd authorizes by (docs/operations.md, "Security model").
package testca

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
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority whose files live in a test's temp dir.
type CA struct {
	Dir    string // where its files are written
	CAFile string // its certificate, PEM
	PEM    []byte // the same, in memory
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// Pair is a certificate with its key, as files and loaded.
type Pair struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// New makes a CA named name.
func New(t testing.TB, name string) *CA {
	t.Helper()
	key := mustKey(t)
	self := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " (test CA)"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, self, self, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Dir: t.TempDir(), cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	ca.serial.Store(1)
	ca.CAFile = filepath.Join(ca.Dir, "ca.pem")
	write(t, ca.CAFile, ca.PEM)
	return ca
}

// Pool holds the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// TrustDomain is the trust domain of the identities the helpers issue.
const TrustDomain = "rolis.test.local"

// ID is the identity URI spiffe://TrustDomain/path (path: "member",
// "operator", "client/app", "client-readonly/app").
func ID(path string) string { return "spiffe://" + TrustDomain + "/" + path }

// Spec says what a certificate is for.
type Spec struct {
	Name     string // common name, and the files' base name
	Serial   int64  // 0: the CA's next serial
	Usages   []x509.ExtKeyUsage
	DNSNames []string
	IPs      []net.IP
	URIs     []string // URI SANs (identities)
	// The validity; zero: from an hour ago to 48 hours from now.
	NotBefore, NotAfter time.Time
}

// Loopback is a certificate named name for 127.0.0.1 and localhost.
func Loopback(name string, usages ...x509.ExtKeyUsage) Spec {
	return Spec{Name: name, Usages: usages, DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}
}

// Member issues a member certificate (identity ID("member")) with server
// and client usages for 127.0.0.1 and localhost, written as name.crt and
// name.key.
func (ca *CA) Member(t testing.TB, name string) Pair {
	spec := Loopback(name, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	spec.URIs = []string{ID("member")}
	return ca.Issue(t, spec)
}

// Client issues a client-usage certificate named name with the identity
// ID(path) ("" : none, a legacy certificate).
func (ca *CA) Client(t testing.TB, name, path string) Pair {
	spec := Spec{Name: name, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if path != "" {
		spec.URIs = []string{ID(path)}
	}
	return ca.Issue(t, spec)
}

// ClientConfig is a TLS configuration that trusts the CA and presents an
// operator certificate it issued: test harnesses both drive failovers
// (Admin) and run workloads (Rolis), as the operator may.
func (ca *CA) ClientConfig(t testing.TB) *tls.Config {
	return ca.TLSConfig(ca.Client(t, "client", "operator"))
}

// TLSConfig trusts the CA and presents p.
func (ca *CA) TLSConfig(p Pair) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool(), Certificates: []tls.Certificate{p.TLS}}
}

// Issue signs a certificate as spec says and writes it and its key as
// NAME.crt and NAME.key in the CA's dir, each replaced atomically (as a
// rotation by rename would).
func (ca *CA) Issue(t testing.TB, spec Spec) Pair {
	t.Helper()
	certPEM, keyPEM := ca.IssuePEM(t, spec)
	p := Pair{CertFile: filepath.Join(ca.Dir, spec.Name+".crt"), KeyFile: filepath.Join(ca.Dir, spec.Name+".key")}
	write(t, p.KeyFile, keyPEM)
	write(t, p.CertFile, certPEM)
	var err error
	if p.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

// IssuePEM signs a certificate as spec says and returns it and its key, PEM.
func (ca *CA) IssuePEM(t testing.TB, spec Spec) (certPEM, keyPEM []byte) {
	t.Helper()
	serial := spec.Serial
	if serial == 0 {
		serial = ca.serial.Add(1)
	}
	key := mustKey(t)
	var uris []*url.URL
	for _, u := range spec.URIs {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatalf("URI SAN %q: %v", u, err)
		}
		uris = append(uris, parsed)
	}
	notBefore, notAfter := spec.NotBefore, spec.NotAfter
	if notBefore.IsZero() {
		notBefore = time.Now().Add(-time.Hour)
	}
	if notAfter.IsZero() {
		notAfter = time.Now().Add(48 * time.Hour)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: spec.Name},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: spec.Usages,
		IPAddresses: spec.IPs, DNSNames: spec.DNSNames, URIs: uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca.cert, &key.PublicKey, ca.key)
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

func mustKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// write replaces path atomically.
func write(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
