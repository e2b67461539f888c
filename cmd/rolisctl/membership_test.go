package main

import (
	"bytes"
	"strings"
	"testing"
)

// Bad arguments are refused before anything is sent (the endpoint is not
// listening: a request would fail differently).
func TestMembershipRefusesBadArgumentsWithoutCallingAnyone(t *testing.T) {
	for _, args := range [][]string{
		{"membership", "add", "4"},
		{"membership", "add", "0=127.0.0.1:7002"},
		{"membership", "add", "x=127.0.0.1:7002"},
		{"membership", "add", "4="},
		{"membership", "remove", "0"},
		{"membership", "remove", "two"},
	} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"--endpoint=127.0.0.1:1", "--timeout=2s"}, args...))
		err := cmd.Execute()
		if err == nil || !(strings.Contains(err.Error(), "want ID=HOST:PORT") || strings.Contains(err.Error(), "want a number from 1")) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
