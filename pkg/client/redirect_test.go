package client

import (
	"testing"

	"google.golang.org/grpc/metadata"
)

func TestLeaderFromTrailerWinsOverMessage(t *testing.T) {
	md := metadata.Pairs(LeaderTrailer, "10.0.0.7:7000")
	if got := leaderFrom(md, "not the leader; leader is 10.0.0.9:7000"); got != "10.0.0.7:7000" {
		t.Fatalf("got %q", got)
	}
}

func TestLeaderFromBadTrailerFallsBackToMessage(t *testing.T) {
	md := metadata.Pairs(LeaderTrailer, "unknown")
	if got := leaderFrom(md, "not leader, leader=127.0.0.1:9000"); got != "127.0.0.1:9000" {
		t.Fatalf("got %q", got)
	}
}

func TestLeaderFromMessageForms(t *testing.T) {
	cases := map[string]string{
		"not the leader; leader is 127.0.0.1:7001":                  "127.0.0.1:7001",
		"not leader (rolis-leader=rolis-1.rolis-hl.ns.svc:7000)":    "rolis-1.rolis-hl.ns.svc:7000",
		"write on a follower: rolis-leader: 127.0.0.1:7001.":        "127.0.0.1:7001",
		"not the leader, leader at [::1]:7001":                      "[::1]:7001",
		"NOT LEADER; Leader \"localhost:80\"":                       "localhost:80",
		"follower 127.0.0.1:7002 is not the leader; leader unknown": "",
		"not the leader":                 "",
		"leader is dns:///10.1.2.3:7000": "10.1.2.3:7000",
		"leader is 127.0.0.1:99999":      "",
		"leader is 127.0.0.1:http":       "",
		"":                               "",
	}
	for msg, want := range cases {
		if got := leaderFrom(nil, msg); got != want {
			t.Errorf("leaderFrom(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestCleanAddr(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1:1":        "127.0.0.1:1",
		" host:65535 ":       "host:65535",
		"host:0":             "",
		"host":               "",
		":7000":              "",
		"a/b:7000":           "",
		"[fe80::1%lo]:70":    "[fe80::1%lo]:70",
		"passthrough:///h:1": "h:1",
	}
	for in, want := range cases {
		if got := cleanAddr(in); got != want {
			t.Errorf("cleanAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
