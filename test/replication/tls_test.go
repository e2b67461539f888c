package replication_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testca"
)

// helloRepl calls Hello on a replication port (as id 0: the callee learns
// nothing from it) with the given transport credentials.
func helloRepl(addr string, creds credentials.TransportCredentials) (*rolisv1.Member, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := rolisv1.NewReplicationClient(conn).Hello(ctx, &rolisv1.HelloRequest{Self: &rolisv1.Member{}})
	return resp.GetSelf(), err
}

// acceptStreamServes says whether a member's accept stream port
// (accept_stream.h) answers a preface and one frame from a caller with the
// given TLS configuration (nil: plaintext): a refused caller gets the
// connection closed, or a TLS error, and never a reply frame.
func acceptStreamServes(addr string, cfg *tls.Config) bool {
	d := net.Dialer{Timeout: 3 * time.Second}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return false
	}
	conn := raw
	if cfg != nil {
		conn = tls.Client(raw, cfg)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	// The preface and an AcceptRequest frame that does not parse as one of
	// this cluster's (no stream, no slot): a member answers it with an error.
	req, _ := proto.Marshal(&rolisv1.AcceptRequest{From: 99})
	frame := append([]byte("ROLISAS1"), byte(len(req)), byte(len(req)>>8), byte(len(req)>>16), byte(len(req)>>24))
	if _, err := conn.Write(append(frame, req...)); err != nil {
		return false
	}
	head := make([]byte, 4)
	_, err = io.ReadFull(conn, head)
	return err == nil
}

// Setting: members started with --tls-cert/--tls-key/--tls-ca (one
// certificate for all, with server and client usages, as the operator's
// cert-manager Certificate). Faults: callers of the replication port with
// no certificate, with a certificate from another CA, and a rolisd started
// as a fifth member with another CA's certificate and the built-in election
// (it would catch up by state transfer, or depose the leader, if the members
// let it in); then kill -9 of the leader and a failover.
// Invariants: the replication port takes only certificates of the cluster's
// CA; the intruder neither gets data nor changes the epoch while the cluster
// keeps acknowledging writes; after the failover no acknowledged transaction
// is lost, the bank total is kept and histories are linearizable.
func TestTLSReplicationRefusesAnotherCAAndFailsOver(t *testing.T) {
	ca, other := testca.New(t, "cluster"), testca.New(t, "intruder")
	member, stranger := ca.Member(t, "member"), other.Member(t, "member")
	flags := func(p testca.Pair, caFile string) []string {
		return []string{"--tls-cert=" + p.CertFile, "--tls-key=" + p.KeyFile, "--tls-ca=" + caFile}
	}
	const intruder = 4
	cl := startCluster(t, clusterOptions{members: 4, initial: 3, tls: ca.ClientConfig(t),
		memberArgs: func(id int) []string {
			if id == intruder {
				return append(flags(stranger, other.CAFile), "--election=builtin", "--election-timeout=100ms")
			}
			return flags(member, ca.CAFile)
		}})
	for id := 1; id <= 3; id++ {
		if !strings.Contains(cl.member(id).Log(), "mutual TLS") {
			t.Fatalf("member %d does not say it replicates over mutual TLS:\n%s", id, cl.member(id).LogTail(20))
		}
	}
	leader := elect(t, cl)
	onStream := func() bool {
		return strings.Contains(cl.member(int(leader)).Log(), "go on its accept stream") &&
			strings.Contains(cl.member(int(leader)).Log(), "mutual TLS)")
	}
	for i := 0; !onStream(); i++ {
		if i > 100 {
			t.Fatalf("the leader's accepts do not go on the accept stream over mutual TLS:\n%s",
				cl.member(int(leader)).LogTail(30))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The replication port: a member's own certificate is taken (the
	// control that makes the refusals below mean something), the others not.
	repl := cl.member(int(leader)).ReplAddr
	self, err := helloRepl(repl, credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(),
		Certificates: []tls.Certificate{member.TLS}}))
	if err != nil {
		t.Fatalf("Hello with the cluster's certificate: %v", err)
	}
	refused := map[string]credentials.TransportCredentials{
		"plaintext":         insecure.NewCredentials(),
		"no certificate":    credentials.NewTLS(&tls.Config{RootCAs: ca.Pool()}),
		"another CA's cert": credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{stranger.TLS}}),
	}
	for what, creds := range refused {
		if _, err := helloRepl(repl, creds); err == nil {
			t.Fatalf("Hello with %s was answered", what)
		}
	}
	// The accept stream takes the same certificates: the leader's accepts go
	// there over mutual TLS, and a member answers only the cluster's callers.
	if self.GetAcceptStreamPort() == 0 {
		t.Fatalf("the leader has no accept stream port: %v", self)
	}
	host, _, _ := net.SplitHostPort(repl)
	stream := net.JoinHostPort(host, strconv.Itoa(int(self.GetAcceptStreamPort())))
	if !acceptStreamServes(stream, &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{member.TLS},
		ServerName: host}) {
		t.Fatalf("the accept stream at %s did not answer the cluster's certificate", stream)
	}
	for what, cfg := range map[string]*tls.Config{
		"plaintext":         nil,
		"no certificate":    {RootCAs: ca.Pool(), ServerName: host},
		"another CA's cert": {RootCAs: ca.Pool(), Certificates: []tls.Certificate{stranger.TLS}, ServerName: host},
	} {
		if acceptStreamServes(stream, cfg) {
			t.Fatalf("the accept stream answered a caller with %s", what)
		}
	}

	w := newClusterWorkload(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w.Setup(ctx)
	w.Start(2, 1, 2, 11)
	before, err := cl.status(int(leader))
	if err != nil {
		t.Fatal(err)
	}
	// The intruder is not ready by the probe's standards (its ports serve
	// another CA's certificate): only its process is waited for.
	_ = cl.member(intruder).Restart(time.Second)
	if !cl.member(intruder).Running() {
		t.Fatalf("the intruder did not start:\n%s", cl.member(intruder).LogTail(20))
	}
	acked := w.Acked()
	time.Sleep(3 * time.Second)
	after, err := cl.status(int(leader))
	if err != nil {
		t.Fatal(err)
	}
	if after.GetRole() != rolisv1.Role_LEADER || after.GetEpoch() != before.GetEpoch() {
		t.Fatalf("with the intruder up the leader went from epoch %d to %s of epoch %d", before.GetEpoch(),
			after.GetRole(), after.GetEpoch())
	}
	if w.Acked() <= acked {
		t.Fatalf("no write acknowledged while the intruder ran (%d before, %d after)", acked, w.Acked())
	}
	istatus := intruderStatus(t, cl.member(intruder).AdminAddr, other.ClientConfig(t))
	// Let in, it would have caught up by state transfer: learned the epoch
	// and replayed the bank.
	if istatus.GetEpoch() != 0 || istatus.GetReplayed().GetTs() != 0 || istatus.GetRole() == rolisv1.Role_LEADER {
		t.Fatalf("the intruder got in: %v", istatus)
	}
	t.Logf("intruder after 3 s: %s of epoch %d, replayed %v; %d writes acknowledged meanwhile", istatus.GetRole(),
		istatus.GetEpoch(), istatus.GetReplayed(), w.Acked()-acked)
	if _, err := cl.member(intruder).Kill(); err != nil {
		t.Fatal(err)
	}

	if _, err := cl.member(int(leader)).Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	next, took := cl.failover(0, runningIDs(cl, leader)...)
	for i := 0; ; i++ {
		if gap, ok := w.FirstAckAfter(killed); ok {
			t.Logf("member %d killed; member %d leads after %v; first acknowledged write %v after the kill",
				leader, next, took, gap)
			break
		}
		if i > 400 {
			t.Fatal("no write acknowledged after the failover")
		}
		time.Sleep(25 * time.Millisecond)
	}
	time.Sleep(time.Second)
	w.Stop()
	t.Log(w.check(cl, next))
}

// intruderStatus reads the status of a member of another CA.
func intruderStatus(t *testing.T, admin string, cfg *tls.Config) *rolisv1.StatusResponse {
	t.Helper()
	conn, err := grpc.NewClient(admin, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := rolisv1.NewAdminClient(conn).Status(ctx, &rolisv1.StatusRequest{})
	if err != nil {
		t.Fatal(fmt.Errorf("status of the intruder: %w", err))
	}
	return st
}
