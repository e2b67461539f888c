package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestQuantilesWithinOnePercent(t *testing.T) {
	var h histogram
	var vals []time.Duration
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(300*time.Microsecond))
		vals = append(vals, d)
		h.record(d)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.95, 0.99, 0.999} {
		want := vals[int(q*float64(len(vals)))-1]
		got := h.quantile(q)
		if diff := float64(got-want) / float64(want); diff > 0.01 || diff < -0.01 {
			t.Errorf("q%.3f = %v, want %v (±1%%)", q, got, want)
		}
	}
	if diff := float64(h.max()-vals[len(vals)-1]) / float64(vals[len(vals)-1]); diff > 0.01 || diff < 0 {
		t.Errorf("max = %v, want %v (+1%%)", h.max(), vals[len(vals)-1])
	}
	var h2 histogram
	h2.merge(&h)
	h2.merge(&histogram{}) // an unused one adds nothing
	if h2.count() != h.count() || h2.quantile(0.5) != h.quantile(0.5) {
		t.Fatal("merge lost counts")
	}
}

func TestOutOfRangeLatenciesAreKept(t *testing.T) {
	var h histogram
	h.record(-time.Second)
	h.record(2 * time.Hour)
	if h.count() != 2 {
		t.Fatalf("count = %d, want 2", h.count())
	}
	if got := h.quantile(1); got < time.Hour*99/100 {
		t.Fatalf("q1 = %v, want about an hour", got)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	for i := range b.N {
		h.record(time.Duration(i&0xfffff) * 100)
	}
}
