package ledger

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// One single-key operation of the history.
type kvInput struct {
	key string
	op  string // get, put, rmw (read old, wrote new), insert (put if absent)
	old string
	new string
}

type kvOutput struct {
	value   string // get: the value read ("" = absent)
	unknown bool   // the client could not know whether it took effect
}

// kvModel: one register per key; an operation whose outcome is unknown may
// or may not have taken effect.
var kvModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{""} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(string)
		in := input.(kvInput)
		out := output.(kvOutput)
		// Each write's effect when its precondition holds; an unknown
		// outcome also allows "no effect".
		var effect []interface{}
		switch in.op {
		case "get":
			if out.value == s {
				return []interface{}{s}
			}
			return nil
		case "put":
			effect = []interface{}{in.new}
		case "rmw":
			if s == in.old {
				effect = []interface{}{in.new}
			}
		case "insert":
			if s == "" {
				effect = []interface{}{in.new}
			}
		default:
			return nil
		}
		if out.unknown {
			return append(effect, s)
		}
		return effect
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(kvInput), output.(kvOutput)
		u := ""
		if out.unknown {
			u = " (outcome unknown)"
		}
		switch in.op {
		case "get":
			return fmt.Sprintf("get(%s) -> %q", in.key, out.value)
		case "rmw":
			return fmt.Sprintf("rmw(%s, %q -> %q)%s", in.key, in.old, in.new, u)
		}
		return fmt.Sprintf("%s(%s, %q)%s", in.op, in.key, in.new, u)
	},
}
