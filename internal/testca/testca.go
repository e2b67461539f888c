// Package testca makes certificate authorities and certificates for tests
// that run real processes over TLS: a CA per test, and member certificates
// that serve and authenticate as a client (as cert-manager issues the
// members' certificate), valid for 127.0.0.1 and localhost.
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
	ca := &CA{Dir: t.TempDir(), cert: cert, key: key}
	ca.serial.Store(1)
	ca.CAFile = filepath.Join(ca.Dir, "ca.pem")
	write(t, ca.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// Pool holds the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Member issues a certificate with server and client usages for
// 127.0.0.1 and localhost, written as name.crt and name.key.
func (ca *CA) Member(t testing.TB, name string) Pair {
	return ca.issue(t, name, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
}

// ClientConfig is a TLS configuration that trusts the CA and presents a
// certificate it issued (for clients of a cluster run with mutual TLS).
func (ca *CA) ClientConfig(t testing.TB) *tls.Config {
	p := ca.issue(t, "client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca.Pool(), Certificates: []tls.Certificate{p.TLS}}
}

func (ca *CA) issue(t testing.TB, name string, usages []x509.ExtKeyUsage) Pair {
	t.Helper()
	key := mustKey(t)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	p := Pair{CertFile: filepath.Join(ca.Dir, name+".crt"), KeyFile: filepath.Join(ca.Dir, name+".key")}
	write(t, p.KeyFile, keyPEM)
	write(t, p.CertFile, certPEM)
	if p.TLS, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
