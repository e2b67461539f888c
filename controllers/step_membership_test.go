/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rolisdb/rolis/controllers/specs"
)

// rolisd refuses a ChangeMembership whose address for a member differs from
// the one it knows, so the operator must name each member exactly as the
// --peers list of the StatefulSet's ConfigMap does.
func TestChangeMembershipNamesMembersAsThePeerListDoes(t *testing.T) {
	c := newCluster("shop", "orders", 5)
	o := specs.DefaultOptions()
	peers := strings.Split(specs.Peers(c, 5, o), ",")
	for _, id := range specs.MemberIDs(5) {
		m := peerMember(c, id, o)
		if got, want := fmt.Sprintf("%d=%s", m.GetId(), m.GetAddress()), peers[id-1]; got != want {
			t.Errorf("member %d: ChangeMembership names %s, --peers has %s", id, got, want)
		}
		host := specs.PeerHost(c, id, o)
		if m.GetAdminAddress() != fmt.Sprintf("%s:%d", host, specs.AdminPort) || m.GetClientAddress() != fmt.Sprintf("%s:%d", host, specs.ClientPort) {
			t.Errorf("member %d: admin %s, client %s: want the ports %d and %d on %s", id, m.GetAdminAddress(), m.GetClientAddress(), specs.AdminPort, specs.ClientPort, host)
		}
	}
}
