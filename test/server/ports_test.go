package server_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rolisdb/rolis/internal/testserver"
)

// A second rolisd on a port a running one listens on fails to start and says
// which flag: with gRPC's default SO_REUSEPORT it started and took part of
// the connections (two benchmarks whose followers picked the same free port
// talked to each other's members). The running one keeps serving.
func TestASecondServerOnAPortInUseFailsToStart(t *testing.T) {
	m, cl := standalone(t)
	mustPut(t, cl, "k", "v")
	bin, err := testserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flags []string }{
		{[]string{"--listen=" + m.ClientAddr, "--admin-listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0"}},
		{[]string{"--listen=127.0.0.1:0", "--admin-listen=" + m.AdminAddr, "--metrics-listen=127.0.0.1:0"}},
	} {
		// rolisd fails at once; one that started is killed after 20 s.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, bin, tc.flags...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		cancel()
		if exitCode(err) <= 0 {
			t.Fatalf("rolisd %v on a port in use: exit %v, want an error\n%s", tc.flags, err, out.String())
		}
		if !strings.Contains(out.String(), "cannot listen on") {
			t.Errorf("rolisd %v: no 'cannot listen on' in its output:\n%s", tc.flags, out.String())
		}
	}
	if v, ok := mustGet(t, cl, "k"); !ok || v != "v" {
		t.Errorf("the running member after the attempts: k = %q, %v", v, ok)
	}
}
