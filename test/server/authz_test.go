package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
)

// Authorization by certificate identity (docs/operations.md, "Security
// model"), on one standalone rolisd with mutual TLS: every kind of
// certificate makes the calls its kind allows, and each refusal is
// PERMISSION_DENIED with a log line, or (another CA, expired) a failed
// handshake.

// authzServer starts rolisd with mutual TLS, authorization on by default,
// and the trust domain of testca's identities.
func authzServer(t *testing.T, ca *testca.CA) *testserver.Member {
	t.Helper()
	srv := ca.Member(t, "server")
	c := testserver.Start(t, testserver.Options{
		Args: []string{"--tls-cert=" + srv.CertFile, "--tls-key=" + srv.KeyFile, "--tls-ca=" + ca.CAFile,
			"--tls-trust-domain=" + testca.TrustDomain},
		ProbeTLS: ca.ClientConfig(t),
	})
	return c.Member(1)
}

// conn dials addr with cfg (closed with the test).
func conn(t *testing.T, addr string, cfg *tls.Config) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// caller is one certificate's view of a member: its client and admin APIs.
type caller struct {
	name  string
	rolis rolisv1.RolisClient
	admin rolisv1.AdminClient
}

func callerOf(t *testing.T, m *testserver.Member, name string, cfg *tls.Config) caller {
	return caller{name: name, rolis: rolisv1.NewRolisClient(conn(t, m.ClientAddr, cfg)),
		admin: rolisv1.NewAdminClient(conn(t, m.AdminAddr, cfg))}
}

func get(key string) *rolisv1.ExecuteRequest {
	return &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{{Kind: rolisv1.Op_GET, Key: []byte(key)}}}
}

func put(key, value string) *rolisv1.ExecuteRequest {
	return &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{{Kind: rolisv1.Op_PUT, Key: []byte(key), Value: []byte(value)}}}
}

// allowed fails when err is a refusal (PERMISSION_DENIED or a failed
// handshake); other errors (a standalone node's FAILED_PRECONDITION to an
// admin RPC) mean the call got through.
func allowed(t *testing.T, what string, err error) {
	t.Helper()
	if c := status.Code(err); c == codes.PermissionDenied || c == codes.Unavailable || c == codes.Unauthenticated {
		t.Errorf("%s: refused: %v", what, err)
	}
}

func TestAuthz_EachKindCallsWhatItMayAndIsRefusedTheRest(t *testing.T) {
	ca := testca.New(t, "cluster")
	m := authzServer(t, ca)
	ctx := ctxFor(t, time.Minute)

	operator := callerOf(t, m, "operator", ca.ClientConfig(t))
	client := callerOf(t, m, "client", ca.TLSConfig(ca.Client(t, "app", "client/app")))
	readonly := callerOf(t, m, "client-readonly", ca.TLSConfig(ca.Client(t, "reports", "client-readonly/reports")))
	member := callerOf(t, m, "member", ca.TLSConfig(ca.Member(t, "peer")))

	// Every kind reads the status (rolisctl status works with any).
	for _, c := range []caller{operator, client, readonly, member} {
		_, err := c.admin.Status(ctx, &rolisv1.StatusRequest{})
		wantCode(t, c.name+" Admin.Status", err, codes.OK)
	}

	// A refusal's log line names the certificate and the method (the first
	// refusals: later ones may be left out of the log, see
	// TestAuthz_RefusalLogIsRateLimited).
	_, err := client.admin.PrepareFailover(ctx, &rolisv1.PrepareFailoverRequest{NewEpoch: 7})
	wantCode(t, "client Admin.PrepareFailover", err, codes.PermissionDenied)
	want := `authorization: refused rolis.v1.Admin/PrepareFailover to certificate subject="CN=app" ` +
		`uri_san="` + testca.ID("client/app") + `" (client)`
	if !strings.Contains(m.Log(), want) {
		t.Errorf("no log line %q:\n%s", want, m.LogTail(20))
	}

	// The client API: operator and client read and write.
	for i, c := range []caller{operator, client} {
		_, err := c.rolis.Execute(ctx, put("k", c.name))
		wantCode(t, c.name+" Execute(PUT)", err, codes.OK)
		b, err := c.rolis.Begin(ctx, &rolisv1.BeginRequest{})
		wantCode(t, c.name+" Begin", err, codes.OK)
		_, err = c.rolis.Put(ctx, &rolisv1.PutRequest{TxnId: b.GetTxnId(), Key: []byte{'i', byte('0' + i)}, Value: []byte("v")})
		wantCode(t, c.name+" Put", err, codes.OK)
		_, err = c.rolis.Commit(ctx, &rolisv1.CommitRequest{TxnId: b.GetTxnId()})
		wantCode(t, c.name+" Commit", err, codes.OK)
	}

	// client-readonly: reads (one-shot, interactive, on a stream), no writes.
	r, err := readonly.rolis.Execute(ctx, get("k"))
	wantCode(t, "client-readonly Execute(GET)", err, codes.OK)
	if string(r.GetResults()[0].GetValue()) != "client" {
		t.Errorf("client-readonly read k = %q, want the client's write", r.GetResults()[0].GetValue())
	}
	b, err := readonly.rolis.Begin(ctx, &rolisv1.BeginRequest{})
	wantCode(t, "client-readonly Begin", err, codes.OK)
	_, err = readonly.rolis.Get(ctx, &rolisv1.GetRequest{TxnId: b.GetTxnId(), Key: []byte("k")})
	wantCode(t, "client-readonly Get", err, codes.OK)
	_, err = readonly.rolis.Put(ctx, &rolisv1.PutRequest{TxnId: b.GetTxnId(), Key: []byte("k"), Value: []byte("ro")})
	wantCode(t, "client-readonly Put", err, codes.PermissionDenied)
	_, err = readonly.rolis.Delete(ctx, &rolisv1.DeleteRequest{TxnId: b.GetTxnId(), Key: []byte("k")})
	wantCode(t, "client-readonly Delete", err, codes.PermissionDenied)
	_, err = readonly.rolis.Commit(ctx, &rolisv1.CommitRequest{TxnId: b.GetTxnId()})
	wantCode(t, "client-readonly Commit of its reads", err, codes.OK)
	_, err = readonly.rolis.Execute(ctx, put("k", "ro"))
	wantCode(t, "client-readonly Execute(PUT)", err, codes.PermissionDenied)
	_, err = readonly.rolis.Execute(ctx, &rolisv1.ExecuteRequest{Ops: []*rolisv1.Op{
		{Kind: rolisv1.Op_GET, Key: []byte("k")}, {Kind: rolisv1.Op_DELETE, Key: []byte("k")}}})
	wantCode(t, "client-readonly Execute(GET, DELETE)", err, codes.PermissionDenied)
	stream, err := readonly.rolis.ExecuteStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range []*rolisv1.ExecuteRequest{get("k"), put("k", "ro-stream")} {
		req.Seq = uint64(i + 1)
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	codesBySeq := map[uint64]codes.Code{}
	for len(codesBySeq) < 2 {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("client-readonly ExecuteStream: %v", err)
		}
		codesBySeq[resp.GetSeq()] = codes.Code(resp.GetErrorCode())
	}
	_ = stream.CloseSend()
	if codesBySeq[1] != codes.OK || codesBySeq[2] != codes.PermissionDenied {
		t.Errorf("client-readonly ExecuteStream: GET %v, PUT %v; want OK, PermissionDenied", codesBySeq[1], codesBySeq[2])
	}
	batch, err := readonly.rolis.ExecuteBatchStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, p := get("k"), put("k", "ro-batch")
	g.Seq, p.Seq = 1, 2
	if err := batch.Send(&rolisv1.ExecuteBatchRequest{Requests: []*rolisv1.ExecuteRequest{g, p}}); err != nil {
		t.Fatal(err)
	}
	codesBySeq = map[uint64]codes.Code{}
	for len(codesBySeq) < 2 {
		reply, err := batch.Recv()
		if err != nil {
			t.Fatalf("client-readonly ExecuteBatchStream: %v", err)
		}
		for _, resp := range reply.GetResponses() {
			codesBySeq[resp.GetSeq()] = codes.Code(resp.GetErrorCode())
		}
	}
	_ = batch.CloseSend()
	if codesBySeq[1] != codes.OK || codesBySeq[2] != codes.PermissionDenied {
		t.Errorf("client-readonly ExecuteBatchStream: GET %v, PUT %v; want OK, PermissionDenied", codesBySeq[1],
			codesBySeq[2])
	}

	// A member certificate may not use the client API, on any method.
	_, err = member.rolis.Execute(ctx, get("k"))
	wantCode(t, "member Execute(GET)", err, codes.PermissionDenied)
	_, err = member.rolis.Begin(ctx, &rolisv1.BeginRequest{})
	wantCode(t, "member Begin", err, codes.PermissionDenied)
	mstream, err := member.rolis.ExecuteStream(ctx)
	if err == nil {
		_ = mstream.Send(get("k"))
		_, err = mstream.Recv()
	}
	wantCode(t, "member ExecuteStream", err, codes.PermissionDenied)

	// The Admin RPCs that change things: the operator only.
	adminCalls := map[string]func(c caller) error{
		"PrepareFailover": func(c caller) error {
			_, err := c.admin.PrepareFailover(ctx, &rolisv1.PrepareFailoverRequest{NewEpoch: 7})
			return err
		},
		"DecideEpoch": func(c caller) error {
			_, err := c.admin.DecideEpoch(ctx, &rolisv1.DecideEpochRequest{})
			return err
		},
		"OpenEpoch": func(c caller) error {
			_, err := c.admin.OpenEpoch(ctx, &rolisv1.OpenEpochRequest{})
			return err
		},
		"AnnounceLeader": func(c caller) error {
			_, err := c.admin.AnnounceLeader(ctx, &rolisv1.AnnounceLeaderRequest{})
			return err
		},
		"ChangeMembership": func(c caller) error {
			_, err := c.admin.ChangeMembership(ctx, &rolisv1.ChangeMembershipRequest{})
			return err
		},
	}
	for name, call := range adminCalls {
		allowed(t, "operator Admin."+name, call(operator))
		for _, c := range []caller{client, readonly, member} {
			wantCode(t, c.name+" Admin."+name, call(c), codes.PermissionDenied)
		}
	}

	// Nothing written by a refused call.
	r, err = operator.rolis.Execute(ctx, get("k"))
	if err != nil || string(r.GetResults()[0].GetValue()) != "client" {
		t.Errorf("k = %q (%v) after the refused writes, want %q", r.GetResults()[0].GetValue(), err, "client")
	}

	for _, kind := range []string{"client", "client-readonly", "member"} {
		if v := metricValue(t, m, "rolis_authz_refusals_total", map[string]string{"kind": kind}); v < 1 {
			t.Errorf("rolis_authz_refusals_total{kind=%q} = %v after its refusals", kind, v)
		}
	}
}

func TestAuthz_CertificatesWithoutAKnownIdentityOfTheTrustDomainAreRefused(t *testing.T) {
	ca, other := testca.New(t, "cluster"), testca.New(t, "other")
	m := authzServer(t, ca)
	ctx := ctxFor(t, time.Minute)

	issue := func(ca *testca.CA, spec testca.Spec) *tls.Config {
		spec.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		return ca.TLSConfig(ca.Issue(t, spec))
	}
	// Trusts the right CA, presents a certificate as named.
	trusting := func(cfg *tls.Config) *tls.Config {
		cfg.RootCAs = ca.Pool()
		return cfg
	}
	denied := map[string]*tls.Config{
		"no identity (legacy)": issue(ca, testca.Spec{Name: "legacy"}),
		"another trust domain": issue(ca, testca.Spec{Name: "foreign", URIs: []string{"spiffe://rolis.other.local/operator"}}),
		"an unknown kind":      issue(ca, testca.Spec{Name: "admin", URIs: []string{testca.ID("admin")}}),
		"two identities":       issue(ca, testca.Spec{Name: "two", URIs: []string{testca.ID("client/a"), testca.ID("operator")}}),
	}
	for what, cfg := range denied {
		c := callerOf(t, m, what, cfg)
		_, err := c.rolis.Execute(ctx, get("k"))
		wantCode(t, what+": Execute", err, codes.PermissionDenied)
		_, err = c.admin.Status(ctx, &rolisv1.StatusRequest{})
		wantCode(t, what+": Admin.Status", err, codes.PermissionDenied)
	}
	// Refused in the handshake, before any method.
	unverified := map[string]*tls.Config{
		"another CA": trusting(issue(other, testca.Spec{Name: "stranger", URIs: []string{testca.ID("operator")}})),
		"expired": issue(ca, testca.Spec{Name: "expired", URIs: []string{testca.ID("operator")},
			NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}),
	}
	for what, cfg := range unverified {
		c := callerOf(t, m, what, cfg)
		_, err := c.rolis.Execute(ctx, get("k"))
		wantCode(t, what+": Execute", err, codes.Unavailable)
		_, err = c.admin.Status(ctx, &rolisv1.StatusRequest{})
		wantCode(t, what+": Admin.Status", err, codes.Unavailable)
	}
	// The control: the same server serves an operator of its trust domain.
	_, err := callerOf(t, m, "operator", ca.ClientConfig(t)).rolis.Execute(ctx, get("k"))
	wantCode(t, "operator Execute", err, codes.OK)
}

// A flood of refused calls is counted in full and logged a bounded number
// of times.
func TestAuthz_RefusalLogIsRateLimited(t *testing.T) {
	ca := testca.New(t, "cluster")
	m := authzServer(t, ca)
	ctx := ctxFor(t, time.Minute)
	member := callerOf(t, m, "member", ca.TLSConfig(ca.Member(t, "peer")))
	const calls = 300
	for i := 0; i < calls; i++ {
		_, err := member.rolis.Execute(ctx, get("k"))
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("call %d: %v, want PermissionDenied", i, err)
		}
	}
	if v := metricValue(t, m, "rolis_authz_refusals_total", map[string]string{"kind": "member"}); v != calls {
		t.Errorf("rolis_authz_refusals_total{kind=member} = %v, want %d", v, calls)
	}
	lines := strings.Count(m.Log(), "authorization: refused")
	if lines == 0 || lines > 40 {
		t.Errorf("%d refusal log lines for %d refused calls, want between 1 and 40", lines, calls)
	}
}

// rolisctl takes the certificate it is given: status with a client
// certificate, failover refused with it (PERMISSION_DENIED shown) and
// reads and writes with it.
func TestAuthz_RolisctlUsesTheGivenCertificate(t *testing.T) {
	ca := testca.New(t, "cluster")
	m := authzServer(t, ca)
	app := ca.Client(t, "app", "client/app")
	tlsArgs := []string{"--tls-ca=" + ca.CAFile, "--tls-cert=" + app.CertFile, "--tls-key=" + app.KeyFile}
	ep := append([]string{"--endpoint=" + m.ClientAddr}, tlsArgs...)
	if _, errOut, err := rolisctl(t, "", append(ep, "put", "greeting", "hello")...); err != nil {
		t.Fatalf("rolisctl put with a client certificate: %v\n%s", err, errOut)
	}
	if out, errOut, err := rolisctl(t, "", append(ep, "get", "greeting")...); err != nil || !strings.Contains(out, "hello") {
		t.Fatalf("rolisctl get with a client certificate: %q %v\n%s", out, err, errOut)
	}
	admin := append([]string{"--endpoint=" + m.AdminAddr}, tlsArgs...)
	if out, errOut, err := rolisctl(t, "", append(admin, "status", "--json")...); err != nil {
		t.Fatalf("rolisctl status with a client certificate: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err := rolisctl(t, "", append(admin, "failover")...)
	if err == nil || !strings.Contains(out+errOut, "PermissionDenied") {
		t.Fatalf("rolisctl failover with a client certificate: err %v, want a PermissionDenied refusal:\n%s%s", err,
			out, errOut)
	}
	// The environment variables name the certificate as the flags do.
	readonly := ca.Client(t, "reports", "client-readonly/reports")
	t.Setenv("ROLISCTL_TLS_CA", ca.CAFile)
	t.Setenv("ROLISCTL_TLS_CERT", readonly.CertFile)
	t.Setenv("ROLISCTL_TLS_KEY", readonly.KeyFile)
	out, errOut, err = rolisctl(t, "", "--endpoint="+m.ClientAddr, "put", "greeting", "overwritten")
	if err == nil || !strings.Contains(out+errOut, "PermissionDenied") {
		t.Fatalf("rolisctl put with a client-readonly certificate from the environment: err %v:\n%s%s", err, out, errOut)
	}
	if out, errOut, err := rolisctl(t, "", "--endpoint="+m.ClientAddr, "get", "greeting"); err != nil ||
		!strings.Contains(out, "hello") {
		t.Fatalf("rolisctl get with a client-readonly certificate: %q %v\n%s", out, err, errOut)
	}
}
