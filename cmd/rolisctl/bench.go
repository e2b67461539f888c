package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"github.com/rolisdb/rolis/pkg/workloads"
	"github.com/spf13/cobra"
)

type benchOptions struct {
	workload    string
	seconds     float64
	warmup      float64
	concurrency int
	pipeline    int
	batch       int
	conns       int
	keys        uint64
	valueSize   int
	readRatio   float64
	rmw         string
	noLoad      bool
	out         output
	serverRetry uint32
	cpuProfile  string
	// Workloads run as server-side procedures (bench_procs.go).
	procedures bool    // ycsbpp as procedures (the other workloads always are)
	zipf       float64 // -1: the workload's default
	mix        string
	warehouses int
	load       bool
	check      bool
	keysSet    bool
	// Failover timeline (bench_timeline.go): bucket width, 0 = none.
	timeline time.Duration
}

// benchReport is the JSON line of `bench --json` (the last line of output).
// throughput_tps, p50_us and p99_us are a stable interface.
type benchReport struct {
	Workload string `json:"workload"`
	// "unary" (Execute), "pipelined" (ExecuteStream) or "batched"
	// (ExecuteBatchStream).
	Mode          string  `json:"mode"`
	Seconds       float64 `json:"seconds"`
	Concurrency   int     `json:"concurrency"`
	Pipeline      int     `json:"pipeline"`
	Batch         int     `json:"batch"`
	Conns         int     `json:"conns"`
	Keys          uint64  `json:"keys"`
	ReadRatio     float64 `json:"read_ratio"`
	RMW           string  `json:"rmw"`
	Commits       uint64  `json:"commits"`
	ReadOnly      uint64  `json:"read_only_commits"`
	ReadWrite     uint64  `json:"read_write_commits"`
	Aborts        uint64  `json:"aborts"`
	Errors        uint64  `json:"errors"`
	ThroughputTPS float64 `json:"throughput_tps"`
	MeanUS        float64 `json:"mean_us"`
	P50US         float64 `json:"p50_us"`
	P95US         float64 `json:"p95_us"`
	P99US         float64 `json:"p99_us"`
	P999US        float64 `json:"p999_us"`
	MaxUS         float64 `json:"max_us"`
	Endpoint      string  `json:"endpoint"`
	// CPU time of rolisctl itself per committed transaction (µs) over the
	// measured run: what the client takes from the shared cores.
	ClientCPUUSPerTxn float64 `json:"client_cpu_us_per_txn"`
	FirstError        string  `json:"first_error,omitempty"`
	// Workloads run as server-side procedures (docs/client.md, "Procedures").
	Procedures bool `json:"procedures,omitempty"`
	// Conflict aborts the server retried inside procedure calls.
	ConflictRetries uint64  `json:"conflict_retries,omitempty"`
	Zipf            float64 `json:"zipf,omitempty"`
	Mix             string  `json:"mix,omitempty"`
	Warehouses      int     `json:"warehouses,omitempty"`
	// The invariant check after the run (--check): "<procedure> ok" or why not.
	Check string `json:"check,omitempty"`
	// --timeline: the outcomes per bucket of timeline_bucket_s seconds from
	// the start of the measured window, at timeline_start_unix (seconds
	// since 1970, this machine's clock: to place a failover in it).
	TimelineBucketS   float64         `json:"timeline_bucket_s,omitempty"`
	TimelineStartUnix float64         `json:"timeline_start_unix,omitempty"`
	Timeline          []timelinePoint `json:"timeline,omitempty"`
}

func newBenchCmd(g *globals) *cobra.Command {
	o := benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a workload (YCSB++, TPC-C, Retwis, TPC-A, bank, hash table) and report throughput and latency",
		Long: `Run YCSB++ one-shot transactions against the server for --seconds and print
a summary of throughput and latency (p50/p95/p99). With -o json|yaml (or
--json) stdout has only the report, one object with throughput_tps, p50_us,
p95_us, p99_us, seconds, commits, aborts, errors and mode; the summary table
goes to stderr with the progress, so the output pipes cleanly.

YCSB++: --keys records ("user0000000000"...) with --value-size byte values,
keys chosen uniformly; half the transactions (--read-ratio) read 4 keys,
the others read and write 4 keys: with --rmw=oneshot in one round trip (4
GETs and 4 PUTs in one transaction), with --rmw=putif as 4 GETs then 4
PUT_IFs on the values read (two round trips; a mismatch counts as an
abort). The keys are loaded first unless --no-load.

API forms:
  --batch=N (default 32)   batched: --pipeline transactions in flight on each
                           of --concurrency ExecuteBatchStream streams, N
                           transactions per stream message;
  --batch=0                pipelined: --pipeline transactions in flight on each
                           ExecuteStream stream, one per message;
  --pipeline=0             unary Execute calls from --concurrency goroutines.
Streams are spread over --conns connections. Progress goes to stderr each
second; a warm-up of --warmup seconds is not measured.

Other workloads run as named server-side procedures, one request per
transaction (docs/client.md, "Procedures"): --workload=tpcc (--warehouses,
--mix=NO/P/OS/D/SL, default 45/43/4/4/4), retwis (--keys, default 1000000,
--zipf, default 0.75), tpca (--keys branches, default 100, --zipf over the
branches), bank (--keys accounts, default 10000, --mix=RO/RW, default
50/50) and hash (--keys elements, default 10000, --mix). ycsbpp runs as
procedures with --procedures or --zipf (--mix=RO/RW or --read-ratio).
--load sets the workload up and loads it first (progress on stderr);
--check runs its invariant check after the run (bank.audit, tpca.check,
tpcc.check).

--timeline=100ms adds to the JSON report a "timeline": committed, aborted
and failed transactions and the commits' p50/p99 per 100 ms bucket. The
run goes on across a leader failover: failures are counted, and streams
are opened again at the leader (give every member in --endpoint); a stream
that answers nothing for --timeout is given up.`,
		Args:    cobra.NoArgs,
		PreRunE: checkOutput(&o.out),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.keysSet = cmd.Flags().Changed("keys")
			return runBench(cmd.Context(), g, o, cmd.OutOrStdout(), os.Stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", "ycsbpp", "workload: "+workloads.List())
	f.Float64Var(&o.seconds, "seconds", 10, "measured duration in seconds")
	f.Float64Var(&o.warmup, "warmup", 1, "unmeasured warm-up in seconds before the measurement")
	f.IntVar(&o.concurrency, "concurrency", 0, "streams (batched, pipelined) or goroutines (unary); 0 = 1 stream, or 16 goroutines")
	f.IntVar(&o.pipeline, "pipeline", 128, "transactions in flight per stream; 0 = unary Execute calls")
	f.IntVar(&o.batch, "batch", 32, "transactions per stream message (ExecuteBatchStream); 0 = one per message (ExecuteStream)")
	f.IntVar(&o.conns, "conns", 0, "HTTP/2 connections (0 = one per 2 streams; unary: min(concurrency, 4))")
	f.Uint64Var(&o.keys, "keys", 1000000, "records")
	f.IntVar(&o.valueSize, "value-size", 8, "bytes per value")
	f.Float64Var(&o.readRatio, "read-ratio", 0.5, "share of read-only transactions")
	f.StringVar(&o.rmw, "rmw", "oneshot", "read-modify-write form: oneshot or putif (unary only)")
	f.BoolVar(&o.noLoad, "no-load", false, "skip loading the records")
	f.Uint32Var(&o.serverRetry, "server-retries", 0, "server-side retries of a conflicting transaction (0 = server default)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured run to this file")
	f.BoolVar(&o.procedures, "procedures", false, "ycsbpp: run as server-side procedures (the other workloads always do)")
	f.Float64Var(&o.zipf, "zipf", -1, "zipf theta in [0, 1) of ycsbpp, retwis and tpca (-1 = the workload's default)")
	f.StringVar(&o.mix, "mix", "", "transaction mix: RO/RW percent (ycsbpp, bank, hash) or NO/P/OS/D/SL (tpcc)")
	f.IntVar(&o.warehouses, "warehouses", 1, "tpcc: warehouses")
	f.BoolVar(&o.load, "load", false, "procedure workloads: set up and load the workload first")
	f.BoolVar(&o.check, "check", false, "procedure workloads: run the invariant check after the run")
	f.DurationVar(&o.timeline, "timeline", 0, "add the outcomes per bucket of this width to the JSON report (0 = none)")
	addOutputFlag(cmd, &o.out, true)
	return cmd
}

// workerStats is owned by one goroutine during the run.
type workerStats struct {
	hist           histogram
	commits        atomic.Uint64 // read by the progress ticker
	ro, rw         uint64
	aborts, errors atomic.Uint64
	conflicts      atomic.Uint64 // retried by the server inside procedure calls
	firstErr       atomic.Pointer[error]
	tl             *timeline // nil without --timeline
}

// note keeps the first error.
func (s *workerStats) note(err error) { s.firstErr.CompareAndSwap(nil, &err) }

// failN counts n transactions that failed with err before they were sent.
func (s *workerStats) failN(n uint64, err error) {
	s.errors.Add(n)
	s.note(err)
	if s.tl != nil {
		s.tl.record(time.Now(), tlFailed, 0, n)
	}
}

// response notes what a reply says besides its outcome: a procedure's
// conflict aborts retried by the server (output [committed, conflicts]).
func (s *workerStats) response(r *rolisv1.ExecuteResponse) {
	if r != nil && len(r.Output) > 1 {
		s.conflicts.Add(uint64(r.Output[1]))
	}
}

func (s *workerStats) outcome(lat time.Duration, readOnly bool, err error, measuring bool) {
	kind := tlCommitted
	switch {
	case err == nil:
		s.commits.Add(1)
		if measuring {
			s.hist.record(lat)
			if readOnly {
				s.ro++
			} else {
				s.rw++
			}
		}
	case errors.Is(err, client.ErrAborted) || errors.Is(err, client.ErrConditionFailed):
		s.aborts.Add(1)
		kind = tlAborted
	default:
		s.errors.Add(1)
		s.note(err)
		kind = tlFailed
	}
	if s.tl != nil {
		s.tl.record(time.Now(), kind, lat, 1)
	}
}

// gen makes YCSB++ transactions.
type gen struct {
	r         *rand.Rand
	keys      uint64
	valueSize int
	readRatio float64
	table     string
	version   uint64
}

// next returns the ops of one transaction and whether it is read-only.
func (g *gen) next(rmwWrites bool) ([]client.Op, bool) {
	ro := g.r.Float64() < g.readRatio
	n := 4
	if !ro && rmwWrites {
		n = 8
	}
	ops := make([]client.Op, 0, n)
	var picked [4]uint64
	for i := 0; i < 4; i++ {
	again:
		k := g.r.Uint64N(g.keys)
		for j := 0; j < i; j++ {
			if picked[j] == k && g.keys >= 4 {
				goto again
			}
		}
		picked[i] = k
		ops = append(ops, client.Get(appendKey(make([]byte, 0, 16), k)).In(g.table))
	}
	if !ro && rmwWrites {
		g.version++
		for i := 0; i < 4; i++ {
			ops = append(ops, client.Put(ops[i].Key, valueOf(g.valueSize, picked[i], g.version)).In(g.table))
		}
	}
	return ops, ro
}

// reqBuf holds one wire request and the storage of its ops, keys and
// values, so that a request can be built again in place (batched mode).
type reqBuf struct {
	req    rolisv1.ExecuteRequest
	ops    [8]rolisv1.Op
	ptrs   [8]*rolisv1.Op
	keys   []byte
	values []byte
	args   []uint64 // procedure calls
}

// fill builds the next transaction into b (reusing its storage; b.req is
// valid until the next fill) and returns whether it is read-only.
func (g *gen) fill(b *reqBuf) bool {
	ro := g.r.Float64() < g.readRatio
	n := 4
	if !ro {
		n = 8
	}
	b.keys = b.keys[:0]
	if cap(b.keys) < 4*(4+keyWidth) {
		b.keys = make([]byte, 0, 4*(4+keyWidth))
	}
	var picked [4]uint64
	for i := 0; i < 4; i++ {
	again:
		k := g.r.Uint64N(g.keys)
		for j := 0; j < i; j++ {
			if picked[j] == k && g.keys >= 4 {
				goto again
			}
		}
		picked[i] = k
		start := len(b.keys)
		b.keys = appendKey(b.keys, k)
		op := &b.ops[i]
		*op = rolisv1.Op{Kind: rolisv1.Op_GET, Table: g.table, Key: b.keys[start:len(b.keys):len(b.keys)]}
		b.ptrs[i] = op
	}
	if !ro {
		g.version++
		if cap(b.values) < 4*g.valueSize {
			b.values = make([]byte, 4*g.valueSize)
		}
		for i := 0; i < 4; i++ {
			v := b.values[i*g.valueSize : (i+1)*g.valueSize : (i+1)*g.valueSize]
			fillValue(v, picked[i], g.version)
			op := &b.ops[4+i]
			*op = rolisv1.Op{Kind: rolisv1.Op_PUT, Table: g.table, Key: b.ops[i].Key, Value: v}
			b.ptrs[4+i] = op
		}
	}
	b.req.Ops = b.ptrs[:n]
	b.req.Procedure, b.req.Args = "", nil
	return ro
}

func runBench(ctx context.Context, g *globals, o benchOptions, out, progress io.Writer) error {
	if o.concurrency == 0 {
		o.concurrency = 1
		if o.pipeline == 0 {
			o.concurrency = 16
		}
	}
	var pw *procWorkload
	if o.workload != "ycsbpp" || o.procedures || o.zipf >= 0 || o.mix != "" {
		var err error
		if pw, err = newProcWorkload(o, o.keysSet); err != nil {
			return err
		}
		if o.rmw != "oneshot" {
			return errors.New("bench: --rmw applies to the key-value ycsbpp only")
		}
	} else if o.load || o.check {
		return errors.New("bench: --load and --check apply to procedure workloads (the key-value ycsbpp loads unless --no-load)")
	}
	if o.concurrency < 0 || o.seconds <= 0 || o.keys == 0 || o.pipeline < 0 || o.batch < 0 {
		return errors.New("bench: --concurrency, --seconds and --keys must be positive, --pipeline and --batch not negative")
	}
	if o.timeline != 0 && (o.timeline < time.Millisecond || o.timeline.Seconds() > o.seconds) {
		return fmt.Errorf("bench: --timeline %v: want a bucket width from 1ms to --seconds", o.timeline)
	}
	if o.rmw != "oneshot" && o.rmw != "putif" {
		return fmt.Errorf("bench: --rmw must be oneshot or putif")
	}
	if o.rmw == "putif" && o.pipeline > 0 {
		return errors.New("bench: --rmw=putif needs --pipeline=0 (two dependent round trips)")
	}
	mode := "unary"
	switch {
	case o.pipeline > 0 && o.batch > 0:
		mode = "batched"
		o.batch = min(o.batch, o.pipeline)
	case o.pipeline > 0:
		mode = "pipelined"
	}
	if mode != "batched" {
		o.batch = 0 // reported as such
	}
	if o.conns <= 0 {
		if mode == "unary" {
			o.conns = min(o.concurrency, 4)
		} else {
			o.conns = max(1, (o.concurrency+1)/2)
		}
	}
	c, err := g.client(ctx, func(cfg *client.Config) {
		cfg.ConnsPerEndpoint = o.conns
		cfg.ServerRetries = o.serverRetry
		cfg.Retry = client.RetryPolicy{MaxAttempts: -1} // count aborts; do not hide them
	})
	if err != nil {
		return err
	}
	defer c.Close()

	if pw != nil {
		if o.load {
			if err := loadProcWorkload(ctx, c, pw, g.timeout, progress); err != nil {
				return err
			}
		}
	} else if !o.noLoad {
		lo := loadOptions{keys: o.keys, valueSize: o.valueSize, batch: 100, streams: 4, window: 8}
		if err := runLoad(ctx, c, lo, g.timeout, progress); err != nil {
			return err
		}
	}

	// Fewer GC cycles: the client shares the machine with the server, and
	// its heap is small.
	defer debug.SetGCPercent(debug.SetGCPercent(400))

	warm := time.Duration(o.warmup * float64(time.Second))
	dur := time.Duration(o.seconds * float64(time.Second))
	t0 := time.Now()
	measureFrom, deadline := t0.Add(warm), t0.Add(warm+dur)
	var measuring atomic.Bool
	var cpuStart atomic.Int64
	stats := make([]*workerStats, o.concurrency)
	for i := range stats {
		stats[i] = &workerStats{}
		if o.timeline > 0 {
			stats[i].tl = newTimeline(measureFrom, o.timeline, dur)
		}
	}

	// Progress each second.
	stopProgress := make(chan struct{})
	var progWG sync.WaitGroup
	progWG.Add(1)
	go func() {
		defer progWG.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var prev uint64
		for {
			select {
			case <-stopProgress:
				return
			case now := <-tick.C:
				var commits, aborts, errs uint64
				for _, s := range stats {
					commits += s.commits.Load()
					aborts += s.aborts.Load()
					errs += s.errors.Load()
				}
				phase := "run"
				if now.Before(measureFrom) {
					phase = "warm-up"
				}
				fmt.Fprintf(progress, "[%5.1fs %s] %8d txn/s  commits %d  aborts %d  errors %d\n",
					now.Sub(t0).Seconds(), phase, commits-prev, commits, aborts, errs)
				prev = commits
			}
		}
	}()
	go func() {
		time.Sleep(time.Until(measureFrom))
		cpuStart.Store(int64(processCPU()))
		measuring.Store(true)
		if o.cpuProfile != "" {
			if f, err := os.Create(o.cpuProfile); err == nil {
				pprof.StartCPUProfile(f)
			}
		}
	}()
	if o.cpuProfile != "" {
		defer pprof.StopCPUProfile()
	}

	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
	defer cancel()
	sr := &streamRun{c: c, o: o, deadline: deadline, measuring: &measuring,
		f: &follower{c: c, endpoints: g.config().Endpoints}, stall: g.timeout}
	if sr.stall <= 0 {
		sr.stall = warm + dur + time.Minute // --timeout=0: no stall detection
	}
	var wg sync.WaitGroup
	for i := range o.concurrency {
		wg.Add(1)
		r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
		var gn txnSource
		if pw != nil {
			pg := pw.newGen(i, r)
			pg.r = r
			gn = pg
		} else {
			gn = &gen{r: r, keys: o.keys, valueSize: o.valueSize, readRatio: o.readRatio, version: uint64(i) << 40}
		}
		switch mode {
		case "unary":
			if pg, ok := gn.(*procGen); ok {
				go func() { defer wg.Done(); unaryProcWorker(runCtx, c, pg, g.timeout, deadline, &measuring, stats[i]) }()
				break
			}
			go func() {
				defer wg.Done()
				unaryWorker(runCtx, c, gn.(*gen), o, g.timeout, deadline, &measuring, stats[i])
			}()
		case "pipelined":
			go func() { defer wg.Done(); pipelineWorker(runCtx, sr, gn, stats[i]) }()
		default:
			go func() { defer wg.Done(); batchWorker(runCtx, sr, gn, stats[i]) }()
		}
	}
	wg.Wait()
	cpuUsed := processCPU() - time.Duration(cpuStart.Load())
	measured := time.Since(measureFrom)
	if measured > dur {
		measured = dur // workers stop sending at the deadline; tail replies are not extra time
	}
	close(stopProgress)
	progWG.Wait()

	var h histogram
	rep := benchReport{Workload: o.workload, Mode: mode, Seconds: measured.Seconds(), Concurrency: o.concurrency,
		Pipeline: o.pipeline, Batch: o.batch, Conns: o.conns, Keys: o.keys, ReadRatio: o.readRatio, RMW: o.rmw, Endpoint: c.Target()}
	if pw != nil {
		rep.Procedures, rep.Keys, rep.Mix, rep.RMW = true, pw.size, o.mix, "procedure"
		rep.ReadRatio = float64(pw.readOnlyPercent) / 100
		if pw.readOnlyPercent < 0 {
			rep.ReadRatio = 0 // a mix of more types: see read_only_commits
		}
		if o.zipf >= 0 {
			rep.Zipf = o.zipf
		}
		if o.workload == "tpcc" {
			rep.Warehouses = o.warehouses
		}
		if o.check {
			rep.Check = runCheck(ctx, c, pw, g.timeout)
		}
	}
	for _, s := range stats {
		h.merge(&s.hist)
		rep.ReadOnly += s.ro
		rep.ReadWrite += s.rw
		rep.Aborts += s.aborts.Load()
		rep.Errors += s.errors.Load()
		rep.ConflictRetries += s.conflicts.Load()
		if e := s.firstErr.Load(); e != nil && rep.FirstError == "" {
			rep.FirstError = (*e).Error()
		}
	}
	if o.timeline > 0 {
		tls := make([]*timeline, len(stats))
		for i, s := range stats {
			tls[i] = s.tl
		}
		rep.TimelineBucketS = o.timeline.Seconds()
		rep.TimelineStartUnix = float64(measureFrom.UnixMicro()) / 1e6
		rep.Timeline = mergeTimelines(tls, dur)
	}
	rep.Commits = rep.ReadOnly + rep.ReadWrite
	rep.ThroughputTPS = float64(rep.Commits) / measured.Seconds()
	if rep.Commits > 0 {
		rep.ClientCPUUSPerTxn = float64(cpuUsed.Microseconds()) / float64(rep.Commits)
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	rep.MeanUS, rep.P50US, rep.P95US = us(h.mean()), us(h.quantile(0.50)), us(h.quantile(0.95))
	rep.P99US, rep.P999US, rep.MaxUS = us(h.quantile(0.99)), us(h.quantile(0.999)), us(h.max())

	if o.out.structured() {
		printBenchTable(progress, rep)
	}
	if rep.FirstError != "" {
		fmt.Fprintf(progress, "first error: %s\n", rep.FirstError)
	}
	if err := o.out.print(out, rep, func(out io.Writer) { printBenchTable(out, rep) }); err != nil {
		return err
	}
	if rep.Commits == 0 {
		return exitError{1, "no transaction committed"}
	}
	return nil
}

func unaryWorker(ctx context.Context, c *client.Client, gn *gen, o benchOptions, timeout time.Duration,
	deadline time.Time, measuring *atomic.Bool, s *workerStats) {
	for {
		start := time.Now()
		if !start.Before(deadline) || ctx.Err() != nil {
			return
		}
		ops, ro := gn.next(o.rmw == "oneshot")
		rctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := c.Execute(rctx, ops...)
		if err == nil && !ro && o.rmw == "putif" {
			gn.version++
			puts := make([]client.Op, 4)
			for i := range 4 {
				v := valueOf(o.valueSize, uint64(i), gn.version)
				if res.Results[i].Found {
					puts[i] = client.PutIf(ops[i].Key, v, res.Results[i].Value)
				} else {
					puts[i] = client.PutIfAbsent(ops[i].Key, v)
				}
			}
			_, err = c.Execute(rctx, puts...)
		}
		cancel()
		s.outcome(time.Since(start), ro, err, measuring.Load())
		pauseAfter(ctx, err, deadline)
	}
}

func printBenchTable(out io.Writer, r benchReport) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "workload\t%s (%s, concurrency %d, pipeline %d, batch %d, conns %d, %d keys, rmw %s)\n",
		r.Workload, r.Mode, r.Concurrency, r.Pipeline, r.Batch, r.Conns, r.Keys, r.RMW)
	fmt.Fprintf(w, "duration\t%.2f s\n", r.Seconds)
	fmt.Fprintf(w, "commits\t%d (read-only %d, read-write %d)\n", r.Commits, r.ReadOnly, r.ReadWrite)
	fmt.Fprintf(w, "aborts\t%d\n", r.Aborts)
	if r.Procedures {
		fmt.Fprintf(w, "server retries\t%d conflict aborts retried inside procedure calls\n", r.ConflictRetries)
	}
	fmt.Fprintf(w, "errors\t%d\n", r.Errors)
	fmt.Fprintf(w, "throughput\t%.0f txn/s\n", r.ThroughputTPS)
	fmt.Fprintf(w, "client cpu\t%.1f us per transaction\n", r.ClientCPUUSPerTxn)
	if r.Check != "" {
		fmt.Fprintf(w, "check\t%s\n", r.Check)
	}
	fmt.Fprintf(w, "latency\tmean %.0f us  p50 %.0f us  p95 %.0f us  p99 %.0f us  p99.9 %.0f us  max %.0f us\n",
		r.MeanUS, r.P50US, r.P95US, r.P99US, r.P999US, r.MaxUS)
	w.Flush()
}

// processCPU returns the user+system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
