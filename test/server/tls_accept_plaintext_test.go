package server_test

import (
	"context"
	"crypto/tls"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// --tls-accept-plaintext (docs/operations.md, "Turning TLS on or off for a
// running cluster"): one member serves a mutual-TLS client and a plaintext
// client on the same client and admin ports, and its metrics port answers
// both HTTPS and plain HTTP. Calls over TLS are still authorized by
// identity (a client certificate is refused the admin API); plaintext calls
// have no identity and are allowed what --tls-authorize=off allows.
func TestTLSAcceptPlaintext_ServesTLSAndPlaintextOnEveryPort(t *testing.T) {
	ca := testca.New(t, "transition")
	member := ca.Member(t, "member")
	operator := ca.ClientConfig(t)
	c := testserver.Start(t, testserver.Options{
		Args: []string{"--tls-cert=" + member.CertFile, "--tls-key=" + member.KeyFile, "--tls-ca=" + ca.CAFile,
			"--tls-accept-plaintext"},
		ProbeTLS: operator,
	})
	m := c.Member(1)
	ctx := ctxFor(t, 60*time.Second)

	tlsClient := newClient(t, m.ClientAddr, func(cfg *client.Config) { cfg.TLS = operator })
	plain := newClient(t, m.ClientAddr)
	mustPut(t, tlsClient, "over-tls", "a")
	mustPut(t, plain, "in-plaintext", "b")
	if v, _ := mustGet(t, plain, "over-tls"); v != "a" {
		t.Fatalf("plaintext read of a TLS write = %q", v)
	}
	if v, _ := mustGet(t, tlsClient, "in-plaintext"); v != "b" {
		t.Fatalf("TLS read of a plaintext write = %q", v)
	}
	// Interleaved, on connections that stay open: both kinds keep working.
	for i := 0; i < 50; i++ {
		mustPut(t, tlsClient, "k", "tls")
		mustPut(t, plain, "k", "plain")
	}

	// The TLS side is the real one: the member's certificate is served, and
	// a client certificate is still refused the admin API over TLS.
	if s, err := servedSerial(t, m.ClientAddr, &tls.Config{RootCAs: ca.Pool(), Certificates: operator.Certificates}); err != nil || s == 0 {
		t.Fatalf("TLS handshake on the client port: serial %d, %v", s, err)
	}
	for name, cfg := range map[string]*tls.Config{"operator over TLS": operator, "plaintext": nil} {
		adm, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, TLS: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := adm.Status(ctx, ""); err != nil {
			t.Errorf("admin Status, %s: %v", name, err)
		}
		adm.Close()
	}
	appCfg := ca.TLSConfig(ca.Client(t, "app", "client/app"))
	adm, err := client.NewAdmin(ctx, client.Config{Endpoints: []string{m.AdminAddr}, TLS: appCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := adm.PrepareFailover(ctx, "", 1000, nil); err == nil {
		t.Error("a client certificate was allowed an admin call over TLS on a --tls-accept-plaintext member")
	}

	// A certificate from another CA is still refused over TLS.
	other := testca.New(t, "other")
	intruder := newClient(t, m.ClientAddr, func(cfg *client.Config) { cfg.TLS = other.ClientConfig(t) })
	if err := intruder.Put(ctx, []byte("k"), []byte("intruder")); err == nil {
		t.Error("a certificate of another CA was served over TLS")
	}

	// Metrics: HTTPS and plain HTTP on the same port.
	if code, _, err := testserver.HTTPSGet(ctx, m.MetricsAddr, "/healthz", &tls.Config{RootCAs: ca.Pool()}); err != nil || code != 200 {
		t.Errorf("HTTPS /healthz: %d %v", code, err)
	}
	if code, _, err := testserver.HTTPGet(ctx, m.MetricsAddr, "/healthz"); err != nil || code != 200 {
		t.Errorf("plain HTTP /healthz: %d %v", code, err)
	}
	if !m.Running() {
		t.Fatal("the member exited")
	}
}

// Without the flag the same member refuses plaintext (the control that
// makes the test above mean something), and the flag without --tls-ca is
// refused at startup.
func TestTLSAcceptPlaintext_NeedsTheFlagAndACA(t *testing.T) {
	ca := testca.New(t, "strict")
	member := ca.Member(t, "member")
	c := testserver.Start(t, testserver.Options{
		Args:     []string{"--tls-cert=" + member.CertFile, "--tls-key=" + member.KeyFile, "--tls-ca=" + ca.CAFile},
		ProbeTLS: ca.ClientConfig(t),
	})
	m := c.Member(1)
	plain := newClient(t, m.ClientAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := plain.Put(ctx, []byte("k"), []byte("v")); err == nil {
		t.Fatal("a TLS member without --tls-accept-plaintext served a plaintext client")
	}
	if _, _, err := testserver.HTTPGet(ctx, m.MetricsAddr, "/healthz"); err == nil {
		t.Error("the metrics port answered plain HTTP without --tls-accept-plaintext")
	}

	bin, err := testserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--tls-cert="+member.CertFile, "--tls-key="+member.KeyFile,
		"--tls-accept-plaintext", "--listen=127.0.0.1:0", "--admin-listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0")
	out, err := cmd.CombinedOutput()
	if exitCode(err) <= 0 {
		t.Fatalf("rolisd started with --tls-accept-plaintext and no --tls-ca (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "--tls-accept-plaintext needs") {
		t.Errorf("the refusal does not name the flag:\n%s", out)
	}
}
