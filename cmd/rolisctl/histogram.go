package main

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// histogram records latencies in an HdrHistogram of nanoseconds from 1 ns
// to an hour (longer ones count as an hour) with 2 significant digits: a
// quantile is within 1% of the recorded value. Not safe for concurrent use:
// keep one per goroutine and merge. The zero value is ready to use.
type histogram struct{ h *hdrhistogram.Histogram }

const histogramHighest = int64(time.Hour)

func (h *histogram) hdr() *hdrhistogram.Histogram {
	if h.h == nil {
		h.h = hdrhistogram.New(1, histogramHighest, 2)
	}
	return h.h
}

func (h *histogram) record(d time.Duration) {
	_ = h.hdr().RecordValue(min(max(int64(d), 0), histogramHighest)) // in range: cannot fail
}

func (h *histogram) merge(o *histogram) {
	if o.h != nil {
		h.hdr().Merge(o.h)
	}
}

func (h *histogram) count() int64 { return h.hdr().TotalCount() }

// quantile returns the value at quantile q in [0, 1].
func (h *histogram) quantile(q float64) time.Duration {
	return time.Duration(h.hdr().ValueAtQuantile(q * 100))
}

func (h *histogram) mean() time.Duration { return time.Duration(h.hdr().Mean()) }

func (h *histogram) max() time.Duration { return time.Duration(h.hdr().Max()) }
