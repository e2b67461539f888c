package main

import (
	"math/bits"
	"time"
)

// histogram records durations in log-linear buckets: exact below 128ns,
// then 64 buckets per power of two (relative error under 1.6%). Not safe
// for concurrent use: keep one per goroutine and merge.
type histogram struct {
	counts [64 << 6]uint64
	n      uint64
	sum    uint64
	max    uint64
}

const subBits = 7

func bucketOf(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	e := bits.Len64(v) - subBits
	return e<<(subBits-1) + int(v>>uint(e))
}

// bucketLow returns the smallest value of bucket i.
func bucketLow(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	e := i>>(subBits-1) - 1
	m := uint64(i - e<<(subBits-1))
	return m << uint(e)
}

func (h *histogram) record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the value at quantile q in [0, 1] (the middle of its
// bucket, capped by the maximum seen).
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketLow(i), bucketLow(i+1)
			return time.Duration(min((lo+hi)/2, h.max))
		}
	}
	return time.Duration(h.max)
}

func (h *histogram) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}
