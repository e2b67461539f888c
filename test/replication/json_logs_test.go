package replication_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// logLine is one line of rolisd under --log-format=json (docs/operations.md,
// "Logging").
type logLine struct {
	TS     string `json:"ts"`
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Msg    string `json:"msg"`
}

// jsonLogLines parses every line member id wrote (the harness's own
// "==== testserver:" lines aside) and fails the test on the first that is
// not a complete JSON log line.
func jsonLogLines(t *testing.T, cl *cluster, id int) []logLine {
	t.Helper()
	var lines []logLine
	for _, text := range strings.Split(cl.member(id).Log(), "\n") {
		if text == "" || strings.HasPrefix(text, "==== testserver:") {
			continue
		}
		var l logLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("member %d wrote a line that is not JSON (%v):\n%s", id, err, text)
		}
		if l.TS == "" || l.Level == "" || l.Logger == "" || l.Msg == "" {
			t.Fatalf("member %d wrote a JSON line without ts, level, logger and msg:\n%s", id, text)
		}
		lines = append(lines, l)
	}
	return lines
}

// findLine returns the first line of logger whose msg contains sub.
func findLine(lines []logLine, logger, sub string) (logLine, bool) {
	for _, l := range lines {
		if l.Logger == logger && strings.Contains(l.Msg, sub) {
			return l, true
		}
	}
	return logLine{}, false
}

// Event: a 3-member cluster under --log-format=json elects a leader, and a
// follower restarted with an empty data directory rejoins by a state
// transfer written to its disk. Invariants: every line every member wrote is
// one JSON object with ts, level, logger and msg; the engine's lines name
// their component as logger ("replication", "durability") and the member in
// msg; a member under --log-level=warn drops the engine's info lines.
func TestJSONLogsCarryTheEnginesLinesThroughStateTransfer(t *testing.T) {
	const quiet = 3 // runs with --log-level=warn
	o, data := durableOptions(t)
	o.args = append(o.args, "--log-format=json")
	durable := o.memberArgs
	o.memberArgs = func(id int) []string {
		a := durable(id)
		if id == quiet {
			a = append(a, "--log-level=warn")
		}
		return a
	}
	cl, leader, w := underLoad(t, o, 41)
	if leader == quiet {
		t.Fatalf("member %d leads; the test expects the first election to pick member 1", leader)
	}
	time.Sleep(time.Second)
	f := other(cl, leader, quiet)
	killEmpty(t, cl, data, int(f))
	if err := cl.member(int(f)).Restart(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := cl.waitCaughtUp(leader, 30*time.Second); err != nil {
		t.Fatalf("member %d restarted empty: %v", f, err)
	}
	w.Stop()

	restarted := jsonLogLines(t, cl, int(f))
	done, ok := findLine(restarted, "replication", "state transfer done")
	if !ok {
		t.Fatalf("member %d logged no \"state transfer done\" line under logger replication:\n%s", f, cl.member(int(f)).LogTail(30))
	}
	if want := fmt.Sprintf("rolis-repl %d: ", f); !strings.HasPrefix(done.Msg, want) || done.Level != "info" {
		t.Fatalf("state transfer line %+v: want level info and msg starting %q", done, want)
	}
	if _, ok := findLine(restarted, "durability", "checkpoint of the state transfer written"); !ok {
		t.Fatalf("member %d logged no checkpoint line under logger durability:\n%s", f, cl.member(int(f)).LogTail(30))
	}
	lead := jsonLogLines(t, cl, int(leader))
	if _, ok := findLine(lead, "replication", "leading epoch"); !ok {
		t.Fatalf("leader %d logged no \"leading epoch\" line under logger replication:\n%s", leader, cl.member(int(leader)).LogTail(30))
	}
	for _, l := range jsonLogLines(t, cl, quiet) {
		if l.Level == "info" || l.Level == "debug" || l.Level == "trace" {
			t.Fatalf("member %d runs with --log-level=warn yet logged %+v", quiet, l)
		}
	}
}
