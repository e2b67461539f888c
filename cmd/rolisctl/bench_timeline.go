package main

import (
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The failover timeline of `bench --timeline=WIDTH` (docs/benchmarks.md,
// "Failover timeline"): the outcomes of the transactions, counted in
// buckets of WIDTH by the time their reply (or failure) came back, from the
// start of the measured window. Each worker keeps its own buckets; the report
// merges them.

// timelineBucket is one bucket of one worker. The counters are atomic
// because a pipelined worker counts a request that could not be sent on its
// own goroutine while the stream's receiver counts replies; the latency
// histogram is touched only by whoever records replies (one goroutine).
type timelineBucket struct {
	committed, aborted, failed atomic.Uint64
	lat                        *hdrhistogram.Histogram // committed transactions' latency; nil until one
}

// timeline is one worker's buckets: a fixed number, so that nothing grows
// while two goroutines count.
type timeline struct {
	start   time.Time
	width   time.Duration
	buckets []timelineBucket
}

// timelinePoint is one bucket of the report (the JSON line's "timeline").
type timelinePoint struct {
	T         float64 `json:"t"` // seconds from the start of the measured window to the bucket's start
	Committed uint64  `json:"committed"`
	Aborted   uint64  `json:"aborted"`
	Failed    uint64  `json:"failed"`
	P50US     float64 `json:"p50_us"`
	P99US     float64 `json:"p99_us"`
}

// timelineTail: replies may come back after the deadline (in flight at
// it, or a stalled stream's failures); they are counted up to this long after.
const timelineTail = 30 * time.Second

func newTimeline(start time.Time, width, measured time.Duration) *timeline {
	n := int((measured+timelineTail)/width) + 1
	return &timeline{start: start, width: width, buckets: make([]timelineBucket, n)}
}

// bucket is the bucket of an outcome at now, or nil before the start (the
// warm-up) or past the tail.
func (tl *timeline) bucket(now time.Time) *timelineBucket {
	d := now.Sub(tl.start)
	if d < 0 {
		return nil
	}
	i := int(d / tl.width)
	if i >= len(tl.buckets) {
		return nil
	}
	return &tl.buckets[i]
}

// Outcome kinds of a transaction in the timeline.
const (
	tlCommitted = iota
	tlAborted
	tlFailed
)

// record counts one outcome at now; lat is recorded for commits.
func (tl *timeline) record(now time.Time, kind int, lat time.Duration, n uint64) {
	b := tl.bucket(now)
	if b == nil {
		return
	}
	switch kind {
	case tlCommitted:
		b.committed.Add(n)
		if b.lat == nil {
			// One significant digit (within 10%): a bucket's p50 and p99
			// for a plot, at 5 KB per bucket in use.
			b.lat = hdrhistogram.New(1, histogramHighest, 1)
		}
		_ = b.lat.RecordValue(min(max(int64(lat), 0), histogramHighest))
	case tlAborted:
		b.aborted.Add(n)
	default:
		b.failed.Add(n)
	}
}

// mergeTimelines sums the workers' buckets, up to the last bucket with
// anything in it and at least up to the end of the measured window.
func mergeTimelines(tls []*timeline, measured time.Duration) []timelinePoint {
	if len(tls) == 0 {
		return nil
	}
	width := tls[0].width
	n := len(tls[0].buckets)
	last := int((measured+width-1)/width) - 1
	pts := make([]timelinePoint, n)
	for i := range n {
		var h *hdrhistogram.Histogram
		p := &pts[i]
		p.T = (time.Duration(i) * width).Seconds()
		for _, tl := range tls {
			b := &tl.buckets[i]
			p.Committed += b.committed.Load()
			p.Aborted += b.aborted.Load()
			p.Failed += b.failed.Load()
			if b.lat != nil {
				if h == nil {
					h = hdrhistogram.New(1, histogramHighest, 1)
				}
				h.Merge(b.lat)
			}
		}
		if h != nil {
			p.P50US = float64(h.ValueAtQuantile(50)) / 1000
			p.P99US = float64(h.ValueAtQuantile(99)) / 1000
		}
		if p.Committed+p.Aborted+p.Failed > 0 {
			last = max(last, i)
		}
	}
	return pts[:min(n, last+1)]
}
