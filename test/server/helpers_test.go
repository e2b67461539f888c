// Package server_test runs the Go client against real rolisd processes on
// loopback (internal/testserver). Nothing here mocks the server. rolisd is
// taken from $ROLISD_BIN or <repo>/bin/rolisd; the tests fail when it is
// absent (`make server-test` builds it first).
package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
	"google.golang.org/grpc/codes"
)

// ctxFor returns a context that ends with the test (or after d).
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// standalone starts one rolisd with extra flags and returns it with a client.
func standalone(t *testing.T, args ...string) (*testserver.Member, *client.Client) {
	t.Helper()
	c := testserver.Start(t, testserver.Options{Args: args})
	m := c.Member(1)
	return m, newClient(t, m.ClientAddr)
}

func newClient(t testing.TB, addr string, mod ...func(*client.Config)) *client.Client {
	t.Helper()
	cfg := client.Config{Endpoints: []string{addr}}
	for _, f := range mod {
		f(&cfg)
	}
	cl, err := client.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func mustPut(t testing.TB, cl *client.Client, k, v string) {
	t.Helper()
	if err := cl.Put(ctxFor(t, 10*time.Second), []byte(k), []byte(v)); err != nil {
		t.Fatalf("put %s: %v", k, err)
	}
}

func mustGet(t testing.TB, cl *client.Client, k string) (string, bool) {
	t.Helper()
	v, ok, err := cl.Get(ctxFor(t, 10*time.Second), []byte(k))
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	return string(v), ok
}

// wantCode fails unless err carries the gRPC code want.
func wantCode(t testing.TB, what string, err error, want codes.Code) {
	t.Helper()
	if got := client.Code(err); got != want {
		t.Fatalf("%s: code %v (%v), want %v", what, got, err, want)
	}
}

// dump returns every key and value of a table, for before/after comparisons.
func dump(t testing.TB, cl *client.Client, table string) string {
	t.Helper()
	items, err := cl.Table(table).Scan(ctxFor(t, 10*time.Second), nil, nil, 10000)
	if err != nil {
		t.Fatalf("scan %q: %v", table, err)
	}
	var b strings.Builder
	for _, kv := range items {
		fmt.Fprintf(&b, "%q=%q\n", kv.Key, kv.Value)
	}
	return b.String()
}

// rolisctl runs bin/rolisctl ($ROLISCTL_BIN) and returns stdout, stderr.
func rolisctl(t testing.TB, stdin string, args ...string) (string, string, error) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
