package e2e

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
)

// availability writes one key every 250 ms (each write bounded by 1 s) and
// keeps the outcome of every probe, to report the longest window without a
// successful write.
type availability struct {
	c      *client.Client
	stopCh chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	probes []probe
}

type probe struct {
	call, at time.Time // sent, answered (or failed)
	ok       bool
}

func startAvailability(c *client.Client) *availability {
	a := &availability{c: c, stopCh: make(chan struct{}), done: make(chan struct{})}
	go a.loop()
	return a
}

func (a *availability) loop() {
	defer close(a.done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-a.stopCh:
			return
		case <-t.C:
		}
		call := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := a.c.Put(ctx, []byte(fmt.Sprintf("avail/%06d", i)), []byte("1"))
		cancel()
		a.mu.Lock()
		a.probes = append(a.probes, probe{call: call, at: time.Now(), ok: err == nil})
		a.mu.Unlock()
	}
}

func (a *availability) stop() {
	close(a.stopCh)
	<-a.done
}

// report: probes, failed probes and the longest time between two
// successful probes.
func (a *availability) report() (n, failed int, longest time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var last time.Time
	for _, p := range a.probes {
		if !p.ok {
			failed++
			continue
		}
		if !last.IsZero() && p.at.Sub(last) > longest {
			longest = p.at.Sub(last)
		}
		last = p.at
	}
	return len(a.probes), failed, longest
}

// recoveredAfter is when the first successful probe answered after the
// longest run of failed probes sent after t; false if no probe sent after t
// failed, or none succeeded after the run.
func (a *availability) recoveredAfter(t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var best time.Duration
	var end time.Time
	var runStart time.Time
	for _, p := range a.probes {
		if p.call.Before(t) {
			continue
		}
		if !p.ok {
			if runStart.IsZero() {
				runStart = p.call
			}
			continue
		}
		if !runStart.IsZero() && p.at.Sub(runStart) > best {
			best, end = p.at.Sub(runStart), p.at
		}
		runStart = time.Time{}
	}
	return end, !end.IsZero()
}
