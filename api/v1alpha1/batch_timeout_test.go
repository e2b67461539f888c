/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BatchTimeoutCase is one line of testdata/batch-timeouts.txt.
type BatchTimeoutCase struct {
	Value    string // as written in a RolisCluster
	Admitted bool
	Flag     string // what the operator hands rolisd (admitted only)
	Micros   int64
}

// readBatchTimeoutCases reads testdata/batch-timeouts.txt at path.
func readBatchTimeoutCases(t testing.TB, path string) []BatchTimeoutCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []BatchTimeoutCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		c := BatchTimeoutCase{Value: fs[0], Admitted: fs[1] == "admitted"}
		if c.Admitted {
			if len(fs) != 4 {
				t.Fatalf("%q: want VALUE admitted FLAG MICROSECONDS", line)
			}
			c.Flag = fs[2]
			if c.Micros, err = strconv.ParseInt(fs[3], 10, 64); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		} else if len(fs) != 2 || fs[1] != "refused" {
			t.Fatalf("%q: want VALUE refused", line)
		}
		out = append(out, c)
	}
	if len(out) < 10 {
		t.Fatalf("%s: only %d cases", path, len(out))
	}
	return out
}

// The shared cases hold for the Go side: a value is admitted exactly when it
// parses as a Go duration within the range (the marker's rule), and the
// operator writes the flag the table says.
func TestBatchTimeoutCasesHoldForTheOperator(t *testing.T) {
	for _, c := range readBatchTimeoutCases(t, "testdata/batch-timeouts.txt") {
		d, err := time.ParseDuration(c.Value)
		admitted := err == nil && ValidBatchTimeout(d)
		if admitted != c.Admitted {
			t.Errorf("%s: admitted = %v, the table says %v", c.Value, admitted, c.Admitted)
			continue
		}
		if !admitted {
			continue
		}
		if got := BatchTimeoutFlag(d); got != c.Flag {
			t.Errorf("%s: the operator writes %q, the table says %q", c.Value, got, c.Flag)
		}
		if got := d.Round(time.Microsecond).Microseconds(); got != c.Micros {
			t.Errorf("%s: %dus, the table says %d", c.Value, got, c.Micros)
		}
	}
}

// The values a cluster could have before the flag format existed (whole
// milliseconds or seconds) are written as Duration.String() wrote them: an
// upgrade of the operator does not change the pod template.
func TestBatchTimeoutFlagKeepsWholeMillisecondsAsBefore(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 10 * time.Millisecond, 250 * time.Millisecond, time.Second} {
		if got := BatchTimeoutFlag(d); got != d.String() {
			t.Errorf("%v: %q, Duration.String() wrote %q", d, got, d.String())
		}
	}
}
