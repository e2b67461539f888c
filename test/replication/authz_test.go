package replication_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// runRolisctl runs bin/rolisctl ($ROLISCTL_BIN) and returns its output.
func runRolisctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("ROLISCTL_BIN")
	if bin == "" {
		root, err := testserver.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, "bin", "rolisctl")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("rolisctl binary not found at %s (build it with `make go-build`, or set ROLISCTL_BIN): %v", bin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Setting: three members with the member certificate (identity
// spiffe://rolis.test.local/member) and --tls-trust-domain; the operator's
// certificate drives `rolisctl failover`, a client's certificate reads and
// writes. Refusals (docs/operations.md, "Security model"): the replication
// port's gRPC service and the accept stream take member certificates only —
// a client's, the operator's, a client-readonly one, a member certificate of
// another trust domain and a legacy one without identity are refused — and
// `rolisctl failover` with a client certificate is PERMISSION_DENIED.
// Invariants: writes acknowledged with member certificates replicate to
// every member; every refusal is counted and logged by name.
func TestAuthzReplicationTakesOnlyMembers(t *testing.T) {
	ca := testca.New(t, "cluster")
	member := ca.Member(t, "member")
	cl := startCluster(t, clusterOptions{members: 3, tls: ca.ClientConfig(t),
		memberArgs: func(int) []string {
			return []string{"--tls-cert=" + member.CertFile, "--tls-key=" + member.KeyFile, "--tls-ca=" + ca.CAFile,
				"--tls-trust-domain=" + testca.TrustDomain}
		}})

	var admins []string
	for id := 1; id <= 3; id++ {
		admins = append(admins, cl.member(id).AdminAddr)
	}
	tlsFlags := func(p testca.Pair) []string {
		return []string{"--endpoint=" + strings.Join(admins, ","), "--tls-ca=" + ca.CAFile,
			"--tls-cert=" + p.CertFile, "--tls-key=" + p.KeyFile}
	}
	app, operator := ca.Client(t, "app", "client/app"), ca.Client(t, "operator", "operator")
	if out, err := runRolisctl(t, append(tlsFlags(app), "failover")...); err == nil ||
		!strings.Contains(out, "PermissionDenied") {
		t.Fatalf("rolisctl failover with a client certificate: %v, want PermissionDenied:\n%s", err, out)
	}
	// Retried for a bounded time, as cl.failover does: right after start the
	// members may still be finding out whether the cluster is new, and a
	// failover then finds no majority to promise.
	var out string
	var err error
	for attempt := 0; attempt < 40; attempt++ {
		if out, err = runRolisctl(t, append(tlsFlags(operator), "failover", "--json")...); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("rolisctl failover with the operator's certificate: %v\n%s", err, out)
	}
	var res struct {
		LeaderID uint32 `json:"leader_id"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.LeaderID == 0 {
		t.Fatalf("rolisctl failover --json: %v\n%s", err, out)
	}
	leader := res.LeaderID
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	// A client certificate writes and reads; acknowledged writes are on a
	// majority, sent over the accept stream with the member certificate.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cli, err := client.New(ctx, client.Config{Endpoints: cl.clientAddrs(), TLS: ca.TLSConfig(app)})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i := 0; i < 50; i++ {
		if err := cli.Put(ctx, []byte(fmt.Sprintf("k%02d", i)), []byte("v")); err != nil {
			t.Fatalf("put with a client certificate: %v", err)
		}
	}
	if v, ok, err := cli.Get(ctx, []byte("k49")); err != nil || !ok || string(v) != "v" {
		t.Fatalf("get with a client certificate: %q %v %v", v, ok, err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("the followers did not replay the client's writes: %v", err)
	}
	lead := cl.member(int(leader))
	if !strings.Contains(lead.Log(), "go on its accept stream") {
		t.Fatalf("the leader's accepts do not go on the accept stream:\n%s", lead.LogTail(30))
	}

	// The replication port's gRPC service: members only.
	repl := lead.ReplAddr
	host, _, _ := net.SplitHostPort(repl)
	certOf := func(spec testca.Spec) tls.Certificate {
		spec.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		return ca.Issue(t, spec).TLS
	}
	others := map[string]tls.Certificate{
		"client":               app.TLS,
		"operator":             operator.TLS,
		"client-readonly":      ca.Client(t, "reports", "client-readonly/reports").TLS,
		"another trust domain": certOf(testca.Spec{Name: "foreign", URIs: []string{"spiffe://rolis.other.local/member"}}),
		"no identity":          certOf(testca.Spec{Name: "legacy"}),
	}
	self, err := helloRepl(repl, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{member.TLS}}))
	if err != nil {
		t.Fatalf("Hello with the member certificate: %v", err)
	}
	for what, cert := range others {
		_, err := helloRepl(repl, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}}))
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("Replication.Hello with a %s certificate: %v, want PermissionDenied", what, err)
		}
	}

	// The accept stream: the handshake's certificate must be a member's.
	stream := net.JoinHostPort(host, strconv.Itoa(int(self.GetAcceptStreamPort())))
	cfg := func(cert tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, ServerName: host}
	}
	if !acceptStreamServes(stream, cfg(member.TLS)) {
		t.Fatalf("the accept stream at %s did not answer the member certificate", stream)
	}
	for what, cert := range others {
		if acceptStreamServes(stream, cfg(cert)) {
			t.Errorf("the accept stream answered a %s certificate", what)
		}
	}
	want := `authorization: refused replication accept stream to certificate subject="CN=app" uri_san="` +
		testca.ID("client/app") + `" (client)`
	for i := 0; !strings.Contains(lead.Log(), want); i++ {
		if i > 100 {
			t.Fatalf("no log line %q:\n%s", want, lead.LogTail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Still replicating after the refusals.
	if err := cli.Put(ctx, []byte("after"), []byte("refusals")); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
