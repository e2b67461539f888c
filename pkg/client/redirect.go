package client

import (
	"net"
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"
)

// leaderFrom finds the leader's client address in a not-leader reply: first
// the "rolis-leader" trailer, then the message (the first host:port that
// follows the word "leader", as in "not the leader; leader is 10.0.0.2:7000"
// or "not leader (rolis-leader=rolis-1.rolis:7000)"). It returns "" when
// neither names a usable address.
func leaderFrom(trailer metadata.MD, msg string) string {
	for _, v := range trailer.Get(LeaderTrailer) {
		if a := cleanAddr(v); a != "" {
			return a
		}
	}
	return leaderFromMessage(msg)
}

func leaderFromMessage(msg string) string {
	// ASCII case only, byte for byte: strings.ToLower may change the
	// length of a message that is not valid UTF-8, and i must index msg.
	lower := []byte(msg)
	for j, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[j] = c + ('a' - 'A')
		}
	}
	i := strings.Index(string(lower), "leader")
	if i < 0 {
		return ""
	}
	rest := msg[i+len("leader"):]
	fields := strings.FieldsFunc(rest, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', ',', ';', '(', ')', '"', '\'', '=', '<', '>', '{', '}':
			return true
		}
		return false
	})
	for _, f := range fields {
		if a := cleanAddr(f); a != "" {
			return a
		}
	}
	return ""
}

// cleanAddr returns s as a dialable host:port, or "" if it is not one.
func cleanAddr(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"dns:///", "passthrough:///", "http://", "https://", "grpc://"} {
		s = strings.TrimPrefix(s, p)
	}
	s = strings.TrimRight(s, ".,;:/")
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return ""
	}
	n, err := strconv.Atoi(port)
	if err != nil || n <= 0 || n > 65535 {
		return ""
	}
	for _, r := range host {
		ok := r == '.' || r == '-' || r == ':' || r == '_' || r == '%' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok {
			return ""
		}
	}
	if strings.Contains(host, ":") { // IPv6 literal
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
