package testserver

import (
	"strings"
	"testing"
)

func TestBinaryFailsClearlyWhenRolisdIsAbsent(t *testing.T) {
	t.Setenv("ROLISD_BIN", "/nonexistent/rolisd")
	_, err := Binary()
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "/nonexistent/rolisd") {
		t.Fatalf("err = %v", err)
	}
}

func TestRepoRootHasTheModule(t *testing.T) {
	root, err := RepoRoot()
	if err != nil || !strings.HasSuffix(strings.TrimRight(root, "/"), "") {
		t.Fatalf("root %q err %v", root, err)
	}
}

func TestFreePortsAreDistinct(t *testing.T) {
	ps, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] || p <= 1024 || p >= ephemeralLow() {
			t.Fatalf("bad or repeated port %d in %v (outgoing connections take ports from %d)", p, ps, ephemeralLow())
		}
		seen[p] = true
	}
}

func TestAssignGivesEveryMemberItsIDAndAllPeers(t *testing.T) {
	c := &Cluster{tb: t, opts: Options{Members: 3, Binary: "/bin/true", Args: []string{"--x=1"},
		MemberArgs: func(id int) []string { return []string{"--y=" + string(rune('0'+id))} }}, logDir: t.TempDir()}
	if err := c.assign(); err != nil {
		t.Fatal(err)
	}
	peers := ""
	for _, m := range c.Members {
		if !strings.HasPrefix(m.ReplAddr, "127.0.0.1:") {
			t.Fatalf("member %d repl addr %q", m.ID, m.ReplAddr)
		}
	}
	for _, a := range c.Members[0].args {
		if strings.HasPrefix(a, "--peers=") {
			peers = a
		}
	}
	for _, m := range c.Members {
		args := strings.Join(m.args, " ")
		if !strings.Contains(args, "--id="+string(rune('0'+m.ID))) || !strings.Contains(args, peers) ||
			!strings.Contains(args, "--x=1") || !strings.Contains(args, "--y="+string(rune('0'+m.ID))) {
			t.Fatalf("member %d args %s", m.ID, args)
		}
	}
	if strings.Count(peers, "=127.0.0.1:") != 3 {
		t.Fatalf("peers %s", peers)
	}
}

func TestStandaloneHasNoPeers(t *testing.T) {
	c := &Cluster{tb: t, opts: Options{Members: 1, Binary: "/bin/true"}, logDir: t.TempDir()}
	if err := c.assign(); err != nil {
		t.Fatal(err)
	}
	if a := strings.Join(c.Members[0].args, " "); strings.Contains(a, "--peers") || strings.Contains(a, "--id") {
		t.Fatalf("args %s", a)
	}
}
