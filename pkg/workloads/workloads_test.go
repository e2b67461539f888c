package workloads

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The engine's list (kWorkloadNames) and this one name the same workloads.
func TestNamesMatchTheEngine(t *testing.T) {
	src, err := os.ReadFile("../../engine/src/server/procedures.cc")
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`kWorkloadNames\[\] = \{([^}]*)\}`).FindSubmatch(src)
	if decl == nil {
		t.Fatal("kWorkloadNames not found in procedures.cc")
	}
	var engine []string
	for _, m := range regexp.MustCompile(`"([a-z]+)"`).FindAllSubmatch(decl[1], -1) {
		engine = append(engine, string(m[1]))
	}
	ours := slices.Clone(Names)
	slices.Sort(engine)
	slices.Sort(ours)
	if !slices.Equal(engine, ours) {
		t.Fatalf("engine runs %v, the Go tools offer %v", engine, ours)
	}
}

func TestList(t *testing.T) {
	if got, want := List(), "ycsbpp, tpcc, retwis, tpca, bank or hash"; got != want {
		t.Fatalf("List() = %q, want %q", got, want)
	}
	if !Known("tpca") || Known("tpcd") {
		t.Fatal("Known")
	}
}
