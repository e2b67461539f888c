package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"github.com/rolisdb/rolis/pkg/workloads"
)

// Workloads that run as named server-side procedures (docs/client.md,
// "Procedures"): the client draws each transaction's inputs and sends one
// request per transaction naming the procedure; the server runs the
// workload's code (engine/src/workloads) with its OCC retries.

// txnSource builds the next transaction into a request buffer and says
// whether it is read-only (gen for the key-value YCSB++, procGen here).
type txnSource interface {
	fill(b *reqBuf) bool
}

// newRequest is the next transaction of src as a fresh request.
func newRequest(src txnSource, serverRetries uint32) (*rolisv1.ExecuteRequest, bool) {
	b := &reqBuf{}
	ro := src.fill(b)
	b.req.MaxRetries = serverRetries
	return &b.req, ro
}

// procWorkload is what bench needs of one workload.
type procWorkload struct {
	name  string
	size  uint64   // reported as keys: records, accounts, elements, branches or warehouses
	setup []uint64 // args of <name>.setup
	check string   // the invariant check run by --check ("" none)
	// readOnlyPercent for the report (-1: a mix of more types).
	readOnlyPercent int
	newGen          func(stream int, r *rand.Rand) *procGen
}

// procGen draws one workload's transactions.
type procGen struct {
	r    *rand.Rand
	next func(g *procGen, args []uint64) (proc string, outArgs []uint64, readOnly bool)
}

func (g *procGen) fill(b *reqBuf) bool {
	proc, args, ro := g.next(g, b.args[:0])
	b.args = args
	b.req.Ops = nil
	b.req.Procedure = proc
	b.req.Args = args
	return ro
}

// parseMix reads --mix: "R/W" (read-only/read-write percent) or, for TPC-C,
// "NO/P/OS/D/SL"; want is how many numbers. They must sum to 100.
func parseMix(s string, want int) ([]int, error) {
	parts := strings.Split(s, "/")
	if len(parts) != want {
		return nil, fmt.Errorf("--mix %q: want %d numbers separated by /", s, want)
	}
	out := make([]int, want)
	sum := 0
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--mix %q: %q is not a percentage", s, p)
		}
		out[i] = v
		sum += v
	}
	if sum != 100 {
		return nil, fmt.Errorf("--mix %q: the numbers sum to %d, want 100", s, sum)
	}
	return out, nil
}

// newProcWorkload validates the workload's knobs. keysSet: --keys was given
// (otherwise each workload has its own default size).
func newProcWorkload(o benchOptions, keysSet bool) (*procWorkload, error) {
	size := func(def uint64) uint64 {
		if keysSet {
			return o.keys
		}
		return def
	}
	theta := func(def float64) (float64, error) {
		if o.zipf < 0 {
			return def, nil
		}
		if o.zipf >= 1 {
			return 0, errors.New("--zipf must be in [0, 1)")
		}
		return o.zipf, nil
	}
	readOnly := func(def int) (int, error) {
		if o.mix == "" {
			return def, nil
		}
		m, err := parseMix(o.mix, 2)
		if err != nil {
			return 0, err
		}
		return m[0], nil
	}
	noMix := func() error {
		if o.mix != "" {
			return fmt.Errorf("--mix does not apply to --workload=%s", o.workload)
		}
		return nil
	}
	w := &procWorkload{name: o.workload, readOnlyPercent: -1}
	switch o.workload {
	case "ycsbpp":
		th, err := theta(0)
		if err != nil {
			return nil, err
		}
		ro := int(o.readRatio*100 + 0.5)
		if o.mix != "" {
			if ro, err = readOnly(50); err != nil {
				return nil, err
			}
		}
		w.size, w.setup, w.readOnlyPercent = size(o.keys), []uint64{size(o.keys)}, ro
		z := newZipf(w.size, th)
		w.newGen = func(int, *rand.Rand) *procGen {
			return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
				args = append(args, 0, 0, 0, 0)
				distinct(args, func() uint64 { return z.next(g.r) })
				if g.r.IntN(100) < ro {
					return "ycsbpp.read", args, true
				}
				return "ycsbpp.rmw", args, false
			}}
		}
	case "bank", "hash":
		ro, err := readOnly(50)
		if err != nil {
			return nil, err
		}
		if o.zipf >= 0 {
			return nil, fmt.Errorf("--zipf does not apply to --workload=%s", o.workload)
		}
		w.readOnlyPercent = ro
		n := size(10000)
		w.size = n
		if o.workload == "bank" {
			w.setup, w.check = []uint64{n, 1000}, "bank.audit"
			w.newGen = func(int, *rand.Rand) *procGen {
				return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
					if g.r.IntN(100) < ro {
						return "bank.audit", args, true
					}
					args = append(args, 0, 0)
					distinct(args, func() uint64 { return g.r.Uint64N(n) })
					return "bank.transfer", append(args, 1+g.r.Uint64N(10)), false
				}}
			}
		} else {
			w.setup = []uint64{n}
			w.newGen = func(int, *rand.Rand) *procGen {
				return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
					if g.r.IntN(100) < ro {
						return "hash.get", append(args, g.r.Uint64N(n)), true
					}
					args = append(args, make([]uint64, 8)...)
					distinct(args, func() uint64 { return g.r.Uint64N(n) })
					return "hash.update", args, false
				}}
			}
		}
	case "retwis":
		if err := noMix(); err != nil {
			return nil, err
		}
		th, err := theta(0.75)
		if err != nil {
			return nil, err
		}
		n := size(1000000)
		w.size, w.setup = n, []uint64{n}
		z := newZipf(n, th)
		w.newGen = func(int, *rand.Rand) *procGen {
			return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
				roll := g.r.IntN(100)
				proc, k, ro := "retwis.get_timeline", 1+g.r.IntN(10), true
				switch {
				case roll < 5:
					proc, k, ro = "retwis.add_user", 3, false
				case roll < 20:
					proc, k, ro = "retwis.follow", 2, false
				case roll < 50:
					proc, k, ro = "retwis.post_tweet", 5, false
				}
				args = append(args, make([]uint64, k)...)
				distinct(args, func() uint64 { return z.next(g.r) })
				return proc, args, ro
			}}
		}
	case "tpca":
		if err := noMix(); err != nil {
			return nil, err
		}
		th, err := theta(0)
		if err != nil {
			return nil, err
		}
		const tellers, accounts = 10, 10000
		b := size(100)
		w.size, w.setup, w.check, w.readOnlyPercent = b, []uint64{b, tellers, accounts}, "tpca.check", 0
		z := newZipf(b, th)
		var client atomic.Uint64
		client.Store(rand.Uint64() << 40) // history keys of this run: distinct from other runs'
		w.newGen = func(stream int, _ *rand.Rand) *procGen {
			base := client.Add(1 << 32)
			var seq uint64
			return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
				br := z.next(g.r)
				seq++
				delta := int64(g.r.IntN(199)) - 99
				return "tpca.txn", append(args, br, br*tellers+g.r.Uint64N(tellers), br*accounts+g.r.Uint64N(accounts),
					base+seq, uint64(delta)), false
			}}
		}
	case "tpcc":
		if o.zipf >= 0 {
			return nil, errors.New("--zipf does not apply to --workload=tpcc")
		}
		mix := []int{45, 43, 4, 4, 4}
		if o.mix != "" {
			var err error
			if mix, err = parseMix(o.mix, 5); err != nil {
				return nil, err
			}
		}
		if o.warehouses < 1 || o.warehouses > 65535 {
			return nil, errors.New("--warehouses must be in [1, 65535]")
		}
		wh := uint64(o.warehouses)
		w.size, w.setup, w.check = wh, []uint64{wh}, "tpcc.check"
		procs := []string{"tpcc.new_order", "tpcc.payment", "tpcc.order_status", "tpcc.delivery", "tpcc.stock_level"}
		// A stream is a terminal of one home warehouse when there are
		// enough streams to cover them; otherwise each transaction picks one.
		spread := o.concurrency < o.warehouses
		w.newGen = func(stream int, _ *rand.Rand) *procGen {
			home := uint64(stream)%wh + 1
			return &procGen{next: func(g *procGen, args []uint64) (string, []uint64, bool) {
				if spread {
					home = 1 + g.r.Uint64N(wh)
				}
				x := g.r.IntN(100)
				t := 0
				for t < 4 && x >= mix[t] {
					x -= mix[t]
					t++
				}
				return procs[t], append(args, home, g.r.Uint64()), t == 2 || t == 4
			}}
		}
	default:
		return nil, usageErrorf("--workload %q: want %s", o.workload, workloads.List())
	}
	return w, nil
}

// loadProcWorkload sets the workload up and loads its parts over a few
// concurrent calls, with a progress bar on stderr.
func loadProcWorkload(ctx context.Context, c *client.Client, w *procWorkload, timeout time.Duration, progress io.Writer) error {
	long := max(timeout, 5*time.Minute) // a TPC-C warehouse is one part
	sctx, cancel := context.WithTimeout(ctx, long)
	res, err := c.Call(sctx, w.name+".setup", w.setup...)
	cancel()
	if err != nil {
		return fmt.Errorf("load: %s.setup: %w", w.name, err)
	}
	if len(res.Output) != 1 || res.Output[0] <= 0 {
		return fmt.Errorf("load: %s.setup returned %v, want [parts]", w.name, res.Output)
	}
	parts := uint64(res.Output[0])
	bar := newProgressBar(progress, "load "+w.name, parts)
	defer bar.finish()
	var next, done, skipped atomic.Uint64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := next.Add(1) - 1
				if p >= parts || ctx.Err() != nil {
					return
				}
				lctx, cancel := context.WithTimeout(ctx, long)
				_, err := c.Call(lctx, w.name+".load", p)
				cancel()
				if alreadyLoaded(err) {
					// A part is one transaction: it is there whole, from
					// an earlier --load, and a re-run measures on it.
					skipped.Add(1)
					err = nil
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("load: %s.load part %d: %w", w.name, p, err)
					}
					mu.Unlock()
					next.Store(parts) // stop the others
					return
				}
				bar.update(done.Add(1))
			}
		}()
	}
	wg.Wait()
	if n := skipped.Load(); n > 0 && first == nil {
		fmt.Fprintf(progress, "load: %d of %d parts of %s were already loaded; kept as they are\n", n, parts, w.name)
	}
	return first
}

// alreadyLoaded says whether a load part failed because its rows exist
// (rolisd's FailedPrecondition "already loaded").
func alreadyLoaded(err error) bool {
	return status.Code(err) == codes.FailedPrecondition && strings.Contains(status.Convert(err).Message(), "already loaded")
}

// unaryProcWorker makes one procedure call at a time (--pipeline=0).
func unaryProcWorker(ctx context.Context, c *client.Client, src *procGen, timeout time.Duration,
	deadline time.Time, measuring *atomic.Bool, s *workerStats) {
	var b reqBuf
	for {
		start := time.Now()
		if !start.Before(deadline) || ctx.Err() != nil {
			return
		}
		ro := src.fill(&b)
		rctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := c.Call(rctx, b.req.Procedure, b.req.Args...)
		cancel()
		if res != nil && len(res.Output) > 1 {
			s.conflicts.Add(uint64(res.Output[1]))
		}
		s.outcome(time.Since(start), ro, err, measuring.Load())
		pauseAfter(ctx, err, deadline)
	}
}

// runCheck runs the workload's invariant check after the run.
func runCheck(ctx context.Context, c *client.Client, w *procWorkload, timeout time.Duration) string {
	if w.check == "" {
		return ""
	}
	cctx, cancel := context.WithTimeout(ctx, max(timeout, time.Minute))
	defer cancel()
	if _, err := c.Call(cctx, w.check); err != nil {
		return fmt.Sprintf("%s failed: %v", w.check, err)
	}
	return w.check + " ok"
}
