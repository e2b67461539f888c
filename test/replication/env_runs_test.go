package replication_test

import (
	"os"
	"strconv"
	"testing"
)

// runsFromEnv returns the number of runs that the environment variable
// `name` asks for, and skips the test (with `hint`) when it asks for none:
// the benchmarks and the soak of this package run only on request.
func runsFromEnv(t *testing.T, name, hint string) int {
	t.Helper()
	runs, _ := strconv.Atoi(os.Getenv(name))
	if runs <= 0 {
		t.Skip(hint)
	}
	return runs
}
