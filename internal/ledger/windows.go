package ledger

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// The linearizability check of the single-key histories, split so that it
// finishes: every key on its own, and every key's history cut into windows
// at its quiescent points (no acknowledged operation of the key pending).
// Between windows it carries the set of states the key may be in, each with
// the operations of unknown outcome that may still take effect (they are
// never quiescent: such an operation may take effect at any time after its
// call, or never). Within a window it searches the orders of the
// operations that the real-time order allows, as porcupine does, with the
// visited configurations remembered.

// linResult is the verdict on every key.
type linResult int

const (
	linOK linResult = iota
	linIllegal
	linUnknown // the search exceeded its budget: no verdict
)

func (r linResult) String() string {
	return [...]string{"Ok", "Illegal", "Unknown"}[r]
}

// keyVerdict is the verdict on one key, with what explains a failure.
type keyVerdict struct {
	key    string
	result linResult
	ops    int
	// Illegal: the window where no state was left, and the states the key
	// could be in when it began.
	window []porcupine.Operation
	before []string
	// Unknown: why the search gave up.
	why string
}

// linBudget bounds the search of one key: configurations visited, and time.
const (
	linBudget     = 2_000_000
	linTimeBudget = 60 * time.Second
)

// checkKeys checks every key's history on its own, in parallel; budget
// bounds each key's search (linBudget when 0).
func checkKeys(history []porcupine.Operation, budget int) []keyVerdict {
	parts := kvModel.Partition(history)
	out := make([]keyVerdict, len(parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, part := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = checkKey(part, budget)
		}()
	}
	wg.Wait()
	return out
}

// config is a state of the key and the operations of unknown outcome that
// have not taken effect (indices into the key's unknown operations, sorted).
type config struct {
	state   string
	pending string // the indices, encoded by pendingKey
}

func pendingKey(idx []int) string {
	var b strings.Builder
	for _, i := range idx {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	return b.String()
}

func parsePending(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func checkKey(ops []porcupine.Operation, budget int) keyVerdict {
	if budget <= 0 {
		budget = linBudget
	}
	v := keyVerdict{key: ops[0].Input.(kvInput).key, ops: len(ops)}
	var known, unknown []porcupine.Operation
	for _, op := range ops {
		if op.Output.(kvOutput).unknown {
			unknown = append(unknown, op)
		} else {
			known = append(known, op)
		}
	}
	slices.SortStableFunc(known, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	slices.SortStableFunc(unknown, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })

	deadline := time.Now().Add(linTimeBudget)
	frontier := map[config]bool{{state: ""}: true}
	nextUnknown := 0
	visited := 0
	for start := 0; start < len(known); {
		// The window: known operations that overlap, transitively.
		end, last := start+1, known[start].Return
		for end < len(known) && known[end].Call <= last {
			last = max(last, known[end].Return)
			end++
		}
		window := known[start:end]
		// Unknown operations called before the window ends join it.
		var joined []int
		for nextUnknown < len(unknown) && unknown[nextUnknown].Call <= last {
			joined = append(joined, nextUnknown)
			nextUnknown++
		}
		s := &windowSearch{ops: window, unknown: unknown, seen: map[string]bool{}, out: map[config]bool{},
			budget: budget - visited, deadline: deadline}
		for c := range frontier {
			pend := append(parsePending(c.pending), joined...)
			slices.Sort(pend)
			s.run(c.state, make([]bool, len(window)), 0, pend)
			if s.exceeded {
				v.result = linUnknown
				v.why = fmt.Sprintf("more than %d configurations or %v searched (window of %d operations at %.3fms, %d states carried in)",
					budget, linTimeBudget, len(window), float64(window[0].Call)/1e6, len(frontier))
				return v
			}
		}
		visited += s.visited
		if len(s.out) == 0 {
			v.result = linIllegal
			v.window = window
			for c := range frontier {
				v.before = append(v.before, c.state)
			}
			slices.Sort(v.before)
			v.before = slices.Compact(v.before)
			return v
		}
		frontier = prune(s.out)
		start = end
	}
	return v
}

// prune drops a configuration whose pending operations are a subset of
// another's in the same state: whatever it allows later, the other allows.
func prune(in map[config]bool) map[config]bool {
	byState := map[string][][]int{}
	for c := range in {
		byState[c.state] = append(byState[c.state], parsePending(c.pending))
	}
	out := map[config]bool{}
	for state, sets := range byState {
		slices.SortFunc(sets, func(a, b []int) int { return cmp.Compare(len(b), len(a)) })
		var kept [][]int
		for _, p := range sets {
			if !slices.ContainsFunc(kept, func(k []int) bool { return subset(p, k) }) {
				kept = append(kept, p)
				out[config{state: state, pending: pendingKey(p)}] = true
			}
		}
	}
	return out
}

// subset reports whether sorted a is a subset of sorted b.
func subset(a, b []int) bool {
	i := 0
	for _, x := range b {
		if i < len(a) && a[i] == x {
			i++
		}
	}
	return i == len(a)
}

// windowSearch finds every configuration the key can be in after the
// window's known operations, from one configuration before it.
type windowSearch struct {
	ops      []porcupine.Operation
	unknown  []porcupine.Operation
	seen     map[string]bool
	out      map[config]bool
	budget   int
	deadline time.Time
	visited  int
	exceeded bool
}

func (s *windowSearch) run(state string, done []bool, ndone int, pend []int) {
	if s.exceeded {
		return
	}
	var key strings.Builder
	key.WriteString(strconv.Quote(state))
	for _, d := range done {
		key.WriteByte("01"[boolInt(d)])
	}
	key.WriteByte('|')
	key.WriteString(pendingKey(pend))
	if s.seen[key.String()] {
		return
	}
	s.seen[key.String()] = true
	if s.visited++; s.visited > s.budget || (s.visited%4096 == 0 && time.Now().After(s.deadline)) {
		s.exceeded = true
		return
	}
	if ndone == len(s.ops) {
		s.out[config{state: state, pending: pendingKey(pend)}] = true
		return
	}
	// The real-time order: an operation may go next only if no pending one
	// returned before it was called.
	minReturn := int64(math.MaxInt64)
	for i, op := range s.ops {
		if !done[i] {
			minReturn = min(minReturn, op.Return)
		}
	}
	for i, op := range s.ops {
		if done[i] || op.Call > minReturn {
			continue
		}
		for _, next := range registerStep(state, op.Input.(kvInput), op.Output.(kvOutput)) {
			done[i] = true
			s.run(next, done, ndone+1, pend)
			done[i] = false
		}
	}
	// An operation of unknown outcome takes effect here, after every
	// operation that returned before its call.
	for j, u := range pend {
		op := s.unknown[u]
		if op.Call > minReturn {
			continue
		}
		for _, next := range registerStep(state, op.Input.(kvInput), kvOutput{}) {
			rest := slices.Delete(slices.Clone(pend), j, j+1)
			s.run(next, done, ndone, rest)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registerStep is the register of kvModel for an operation that took
// effect (or a read): the states after it, none if it cannot happen.
func registerStep(s string, in kvInput, out kvOutput) []string {
	switch in.op {
	case "get":
		if out.value == s {
			return []string{s}
		}
	case "put":
		return []string{in.new}
	case "rmw":
		if s == in.old {
			return []string{in.new}
		}
	case "insert":
		if s == "" {
			return []string{in.new}
		}
	}
	return nil
}
