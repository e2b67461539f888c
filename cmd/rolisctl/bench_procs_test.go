package main

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseMixWantsPercentagesThatSumTo100(t *testing.T) {
	if m, err := parseMix("90/10", 2); err != nil || m[0] != 90 || m[1] != 10 {
		t.Fatalf("90/10: %v %v", m, err)
	}
	if m, err := parseMix("45/43/4/4/4", 5); err != nil || m[4] != 4 {
		t.Fatalf("tpcc mix: %v %v", m, err)
	}
	for _, bad := range []string{"90/20", "90", "a/b", "-10/110", "50/50/0"} {
		if _, err := parseMix(bad, 2); err == nil {
			t.Errorf("--mix %q accepted", bad)
		}
	}
}

func TestProcWorkloadKnobsAreChecked(t *testing.T) {
	base := benchOptions{keys: 1000, readRatio: 0.5, zipf: -1, warehouses: 1}
	for _, c := range []struct {
		mod  func(*benchOptions)
		want string
	}{
		{func(o *benchOptions) { o.workload = "nope" }, "want ycsbpp"},
		{func(o *benchOptions) { o.workload = "retwis"; o.zipf = 1 }, "--zipf"},
		{func(o *benchOptions) { o.workload = "retwis"; o.mix = "50/50" }, "--mix does not apply"},
		{func(o *benchOptions) { o.workload = "bank"; o.zipf = 0.5 }, "--zipf does not apply"},
		{func(o *benchOptions) { o.workload = "tpcc"; o.warehouses = 0 }, "--warehouses"},
		{func(o *benchOptions) { o.workload = "tpcc"; o.mix = "50/50" }, "want 5 numbers"},
	} {
		o := base
		c.mod(&o)
		if _, err := newProcWorkload(o, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", o, err, c.want)
		}
	}
}

// Every generator's requests name a procedure of its workload with args in
// range (the server refuses the others: docs/client.md, "Procedures").
func TestProcGeneratorsStayInRange(t *testing.T) {
	for _, w := range []string{"ycsbpp", "bank", "hash", "retwis", "tpca", "tpcc"} {
		o := benchOptions{workload: w, keys: 50, readRatio: 0.5, zipf: -1, warehouses: 3, concurrency: 1}
		pw, err := newProcWorkload(o, true)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		g := pw.newGen(0, r)
		g.r = r
		var b reqBuf
		for range 2000 {
			g.fill(&b)
			if !strings.HasPrefix(b.req.Procedure, w+".") {
				t.Fatalf("%s: procedure %q", w, b.req.Procedure)
			}
			if w == "tpcc" && (b.req.Args[0] < 1 || b.req.Args[0] > 3) {
				t.Fatalf("tpcc: home warehouse %d of 3", b.req.Args[0])
			}
			if w == "ycsbpp" || w == "retwis" || w == "bank" && b.req.Procedure == "bank.transfer" {
				seen := map[uint64]bool{}
				for _, a := range b.req.Args[:min(len(b.req.Args), 4)] {
					if w == "bank" && len(seen) == 2 {
						break
					}
					if a >= 50 || seen[a] {
						t.Fatalf("%s: args %v out of range or repeated", w, b.req.Args)
					}
					seen[a] = true
				}
			}
		}
	}
}

func TestZipfSkewsTowardsTheFirstRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	z := newZipf(1000, 0.99)
	low := 0
	for range 10000 {
		v := z.next(r)
		if v >= 1000 {
			t.Fatalf("draw %d of 1000", v)
		}
		if v < 10 {
			low++
		}
	}
	// Uniform would put 1% below 10; θ 0.99 puts about 40% there.
	if low < 2000 {
		t.Fatalf("%d of 10000 draws below 10: not skewed", low)
	}
}
