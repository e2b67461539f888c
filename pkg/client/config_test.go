package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func writeSelfSigned(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "c"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

func serialOf(t *testing.T, k *keyPairReloader) int64 {
	t.Helper()
	c, err := k.get()
	if err != nil {
		t.Fatal(err)
	}
	x, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return x.SerialNumber.Int64()
}

func TestClientCertificateIsReloadedWhenTheFilesChange(t *testing.T) {
	dir := t.TempDir()
	cf, kf := filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	writeSelfSigned(t, cf, kf, 1)
	k := &keyPairReloader{certFile: cf, keyFile: kf}
	if s := serialOf(t, k); s != 1 {
		t.Fatalf("serial %d", s)
	}
	writeSelfSigned(t, cf, kf, 2)
	later := time.Now().Add(2 * time.Second) // mtime granularity
	os.Chtimes(cf, later, later)
	os.Chtimes(kf, later, later)
	if s := serialOf(t, k); s != 2 {
		t.Fatalf("serial after rotation %d, want 2", s)
	}
	// A half-written rotation keeps the last good pair.
	os.WriteFile(cf, []byte("garbage"), 0o600)
	if s := serialOf(t, k); s != 2 {
		t.Fatalf("serial with a broken file %d, want the last good 2", s)
	}
}

func TestTLSConfigNeedsBothCertAndKey(t *testing.T) {
	c := Config{CertFile: "x"}
	if _, err := c.tlsConfig(); err == nil {
		t.Fatal("cert without key accepted")
	}
	c = Config{}
	if cfg, err := c.tlsConfig(); err != nil || cfg != nil {
		t.Fatalf("plaintext: %v %v", cfg, err)
	}
	c = Config{CAFile: "/nonexistent"}
	if _, err := c.tlsConfig(); err == nil {
		t.Fatal("missing CA file accepted")
	}
}
