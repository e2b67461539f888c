/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"errors"
	"testing"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// The address announced for the leader is the one the leader serves on, as
// the members report it (its own report first); "" lets the driver fall back
// to the pod's DNS name.
func TestAdvertisedClientAddressPrefersTheLeadersOwnReport(t *testing.T) {
	view := func(addrs map[uint32]string) *rolisv1.StatusResponse {
		st := &rolisv1.StatusResponse{}
		for id, a := range addrs {
			st.Members = append(st.Members, &rolisv1.Member{Id: id, ClientAddress: a})
		}
		return st
	}
	members := []Member{
		{ID: 1, Status: view(map[uint32]string{1: "a:1", 2: "stale:2"})},
		{ID: 2, Status: view(map[uint32]string{2: "own:2", 3: ""})},
		{ID: 3, Err: errors.New("down")},
	}
	for id, want := range map[int32]string{1: "a:1", 2: "own:2", 3: "", 4: ""} {
		if got := AdvertisedClientAddress(members, id); got != want {
			t.Errorf("member %d: %q, want %q", id, got, want)
		}
	}
	members[1].Err, members[1].Status = errors.New("down"), nil
	if got := AdvertisedClientAddress(members, 2); got != "stale:2" {
		t.Errorf("leader unreachable: %q, want what member 1 learned", got)
	}
}
