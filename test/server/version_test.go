package server_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rolisdb/rolis/internal/testserver"
)

// rolisd names the commit it was built from (Status.version, what
// `rolisctl status` shows, and rolis_build_info). The version was once
// fixed when the build directory was configured: a binary built from a
// later commit named an earlier one. Only for the checkout's own
// bin/rolisd (what `make build` makes before the tests).
func TestVersionNamesTheCommitTheBinaryWasBuiltFrom(t *testing.T) {
	root, err := testserver.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	if abs, _ := filepath.Abs(bin); abs != filepath.Join(root, "bin", "rolisd") {
		t.Skipf("rolisd at %s is not this checkout's bin/rolisd", bin)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	m, _ := standalone(t)
	stdout, stderr, err := rolisctl(t, "", "--endpoint="+m.AdminAddr, "status", "--json")
	if err != nil {
		t.Fatalf("rolisctl status: %v\n%s", err, stderr)
	}
	var rows []struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(lastLine(stdout)), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("rolisctl status --json: %v\n%s", err, stdout)
	}
	// 0.1.0+<git describe>: a tag's "...-g<hash>", or the bare hash.
	hash := regexp.MustCompile(`([0-9a-f]{7,40})(-dirty)?$`).FindStringSubmatch(rows[0].Version)
	if hash == nil || !strings.HasPrefix(strings.TrimSpace(string(head)), hash[1]) {
		t.Errorf("rolisd says version %q; the checkout is at %s (rebuild with `make build`)", rows[0].Version,
			strings.TrimSpace(string(head)))
	}
}
