package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

// keyWidth digits after the "user" prefix: keys sort in numeric order.
const keyWidth = 10

// appendKey appends the key of record i ("user0000000042").
func appendKey(b []byte, i uint64) []byte {
	b = append(b, "user"...)
	var d [20]byte
	s := strconv.AppendUint(d[:0], i, 10)
	for range keyWidth - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// valueOf fills an n-byte value for record i (version v).
func valueOf(n int, i, v uint64) []byte {
	b := make([]byte, n)
	fillValue(b, i, v)
	return b
}

// fillValue writes the value of record i (version v) into b.
func fillValue(b []byte, i, v uint64) {
	x := i*0x9E3779B97F4A7C15 ^ v*0xBF58476D1CE4E5B9
	for j := range b {
		b[j] = 'a' + byte(x%26)
		x = x>>5 | x<<59
	}
}

type loadOptions struct {
	keys, start uint64
	valueSize   int
	batch       int
	streams     int
	window      int
	table       string
}

func newLoadCmd(g *globals) *cobra.Command {
	o := loadOptions{}
	var out output
	cmd := &cobra.Command{
		Use:     "load",
		Short:   "Write N keys (user0000000000...) with a progress bar on stderr",
		Long:    "Write N keys (user0000000000...) with a progress bar on stderr; then a summary line, or with -o json|yaml {keys, seconds, keys_per_second}.",
		Args:    cobra.NoArgs,
		PreRunE: checkOutput(&out),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client(cmd.Context(), func(cfg *client.Config) { cfg.ConnsPerEndpoint = max(1, o.streams/2) })
			if err != nil {
				return err
			}
			defer c.Close()
			start := time.Now()
			if err := runLoad(cmd.Context(), c, o, g.timeout, os.Stderr); err != nil {
				return err
			}
			el := time.Since(start)
			rate := float64(o.keys) / el.Seconds()
			return out.print(cmd.OutOrStdout(), map[string]any{"keys": o.keys, "seconds": el.Seconds(), "keys_per_second": rate},
				func(w io.Writer) {
					fmt.Fprintf(w, "loaded %d keys in %.2fs (%.0f keys/s)\n", o.keys, el.Seconds(), rate)
				})
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&o.keys, "keys", 100000, "number of keys")
	f.Uint64Var(&o.start, "start", 0, "first record number")
	f.IntVar(&o.valueSize, "value-size", 8, "bytes per value")
	f.IntVar(&o.batch, "batch", 100, "puts per transaction")
	f.IntVar(&o.streams, "concurrency", 4, "pipelined streams")
	f.IntVar(&o.window, "pipeline", 16, "transactions in flight per stream")
	f.StringVar(&o.table, "table", "", "table (default \"kv\")")
	addOutputFlag(cmd, &out, false)
	return cmd
}

// runLoad writes records [o.start, o.start+o.keys) in batches over pipelined
// streams. Conflicts cannot happen (disjoint keys) but are retried anyway.
func runLoad(ctx context.Context, c *client.Client, o loadOptions, timeout time.Duration, progress io.Writer) error {
	if o.batch <= 0 || o.streams <= 0 || o.window <= 0 || o.valueSize < 0 {
		return errors.New("load: --batch, --concurrency and --pipeline must be positive")
	}
	var next, done atomic.Uint64
	next.Store(o.start)
	end := o.start + o.keys
	bar := newProgressBar(progress, "load", o.keys)
	defer bar.finish()
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				bar.update(done.Load())
			}
		}
	}()
	defer close(stop)

	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	var failed atomic.Bool
	fail := func(err error) { errOnce.Do(func() { firstErr = err; failed.Store(true) }) }
	for range o.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.NewPipeline(ctx, client.PipelineOptions{MaxInFlight: o.window})
			if err != nil {
				fail(err)
				return
			}
			defer p.Close()
			var inner sync.WaitGroup
			for !failed.Load() {
				lo := next.Add(uint64(o.batch)) - uint64(o.batch)
				if lo >= end {
					break
				}
				hi := min(lo+uint64(o.batch), end)
				ops := make([]client.Op, 0, hi-lo)
				for i := lo; i < hi; i++ {
					ops = append(ops, client.Put(appendKey(nil, i), valueOf(o.valueSize, i, 0)).In(o.table))
				}
				inner.Add(1)
				var send func(attempt int)
				send = func(attempt int) {
					err := p.ExecuteAsync(ctx, ops, func(_ *client.Result, err error) {
						if errors.Is(err, client.ErrAborted) && attempt < 10 {
							go send(attempt + 1) // never block the receiver
							return
						}
						if err != nil {
							fail(err)
						} else {
							done.Add(hi - lo)
						}
						inner.Done()
					})
					if err != nil {
						fail(err)
						inner.Done()
					}
				}
				send(0)
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	bar.update(done.Load())
	if firstErr != nil {
		return fmt.Errorf("load: %w", firstErr)
	}
	return nil
}

// progressBar draws "[=====>    ] 45% 450000/1000000 123456/s" on a
// terminal (redrawn in place), or a plain line per second otherwise.
type progressBar struct {
	w     io.Writer
	label string
	total uint64
	start time.Time
	tty   bool
	last  time.Time
	drawn bool
	mu    sync.Mutex
}

func newProgressBar(w io.Writer, label string, total uint64) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, label: label, total: total, start: time.Now(), tty: tty}
}

func (b *progressBar) update(n uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if !b.tty && now.Sub(b.last) < time.Second && n < b.total {
		return
	}
	b.last = now
	frac := 1.0
	if b.total > 0 {
		frac = float64(n) / float64(b.total)
	}
	const width = 30
	full := int(frac * width)
	bar := strings.Repeat("=", full)
	if full < width {
		bar += ">" + strings.Repeat(" ", width-full-1)
	}
	rate := float64(n) / max(now.Sub(b.start).Seconds(), 1e-9)
	line := fmt.Sprintf("%s [%s] %3.0f%% %d/%d %.0f/s", b.label, bar, frac*100, n, b.total, rate)
	if b.tty {
		fmt.Fprintf(b.w, "\r%s", line)
		b.drawn = true
	} else {
		fmt.Fprintln(b.w, line)
	}
}

func (b *progressBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tty && b.drawn {
		fmt.Fprintln(b.w)
	}
}
