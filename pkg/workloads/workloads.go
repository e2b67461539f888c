// Package workloads names the benchmark workloads that rolisd runs as
// server-side procedures (docs/client.md, "Procedures") and that
// `rolisctl bench --workload` and `kubectl rolis bench --workload` accept.
// The engine's own list is kWorkloadNames in engine/src/server/procedures.cc;
// a test keeps the two equal.
package workloads

import (
	"slices"
	"strings"
)

// Names in the order users see them; ycsbpp, the default, first.
var Names = []string{"ycsbpp", "tpcc", "retwis", "tpca", "bank", "hash"}

// Known reports whether name is one of Names.
func Known(name string) bool { return slices.Contains(Names, name) }

// List is Names for a message: "ycsbpp, tpcc, retwis, tpca, bank or hash".
func List() string {
	return strings.Join(Names[:len(Names)-1], ", ") + " or " + Names[len(Names)-1]
}
