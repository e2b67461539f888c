package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsAreContiguousAndMonotonic(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 127, 128, 129, 191, 192, 255, 256, 1000, 1 << 20, 1<<40 + 12345, 1<<63 + 1} {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucket of %d is %d, below %d", v, b, prev)
		}
		if lo := bucketLow(b); lo > v || bucketLow(b+1) <= v {
			t.Fatalf("value %d in bucket %d [%d, %d)", v, b, lo, bucketLow(b+1))
		}
		prev = b
	}
}

func TestQuantilesWithinBucketError(t *testing.T) {
	var h histogram
	var vals []time.Duration
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		d := time.Duration(r.ExpFloat64() * float64(300*time.Microsecond))
		vals = append(vals, d)
		h.record(d)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.95, 0.99} {
		want := vals[int(q*float64(len(vals)))-1]
		got := h.quantile(q)
		if diff := float64(got-want) / float64(want); diff > 0.02 || diff < -0.02 {
			t.Errorf("q%.2f = %v, want %v (±2%%)", q, got, want)
		}
	}
	var h2 histogram
	h2.merge(&h)
	if h2.n != h.n || h2.quantile(0.5) != h.quantile(0.5) {
		t.Fatal("merge lost counts")
	}
}
