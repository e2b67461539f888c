package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rolisdb/rolis/internal/testserver"
)

// Three members started with --id and --peers (replication may not be in
// this build: the check is the harness and `status` over several members).
func TestThreeMembersStart_StatusJSONListsEveryMember(t *testing.T) {
	c := testserver.Start(t, testserver.Options{Members: 3})
	all := strings.Join(c.AdminAddrs(), ",")
	for _, eps := range []string{all, c.Member(1).AdminAddr} {
		out, errOut, err := rolisctl(t, "", "--endpoint="+eps, "status", "--json")
		if err != nil {
			t.Fatalf("status --endpoint=%s: %v\n%s%s", eps, err, out, errOut)
		}
		var members []map[string]any
		if err := json.Unmarshal([]byte(lastLine(out)), &members); err != nil {
			t.Fatalf("last line is not a JSON array: %v\n%s", err, out)
		}
		if len(members) != 3 {
			t.Fatalf("--endpoint=%s: %d members: %s", eps, len(members), lastLine(out))
		}
		for i, m := range members {
			if m["id"] != float64(i+1) {
				t.Errorf("member %d has id %v", i+1, m["id"])
			}
			for _, k := range []string{"role", "epoch", "watermark"} {
				if _, ok := m[k]; !ok {
					t.Errorf("member %d has no %q", i+1, k)
				}
			}
			// Listed endpoints answer; unlisted members on one host
			// cannot be found (no admin address on the wire).
			if eps == all && m["reachable"] != true {
				t.Errorf("member %d unreachable: %v", i+1, m)
			}
			if eps == all && m["decider"] != "control-stream" {
				t.Errorf("member %d: decider %v, want control-stream (rolisd's default)", i+1, m["decider"])
			}
		}
		t.Logf("--endpoint=%s: %s", eps, lastLine(out))
	}
}
