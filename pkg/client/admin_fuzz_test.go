package client

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// splitReplies cuts data into up to five replies, each prefixed by its
// length (one byte).
func splitReplies(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 && len(out) < 5 {
		n := min(int(data[0]), len(data)-1)
		out = append(out, data[1:1+n])
		data = data[1+n:]
	}
	return out
}

// The admin replies of members (Status, decoded as gRPC decodes them) and
// the not-leader errors they send (message and leader trailer) are read by
// the client without a panic and with the choices the failover relies on:
// the candidate picked is a member that answered, the one asked for if
// any, otherwise the most advanced member that is not catching up; a
// leader address taken from an error is host:port.
func FuzzAdminReplies(f *testing.F) {
	status := func(st *rolisv1.StatusResponse) []byte {
		b, err := proto.Marshal(st)
		if err != nil {
			f.Fatal(err)
		}
		return append([]byte{byte(len(b))}, b...)
	}
	f.Add(slices.Concat(
		status(&rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_LEADER, Epoch: 2, Watermark: &rolisv1.LogKey{Epoch: 2, Ts: 9}}),
		status(&rolisv1.StatusResponse{Id: 2, Role: rolisv1.Role_FOLLOWER, Epoch: 2, PromisedEpoch: 3}),
		status(&rolisv1.StatusResponse{Id: 3, Role: rolisv1.Role_CATCHING_UP, Epoch: 1})),
		uint32(0), "not the leader; leader is 10.0.0.1:7000", "db-1.db:7000")
	f.Add(status(&rolisv1.StatusResponse{Id: 7, Members: []*rolisv1.Member{{Id: 7, Address: "h:1"}}}),
		uint32(7), "no leader", "")
	f.Fuzz(func(t *testing.T, data []byte, to uint32, msg, trailer string) {
		var ms []MemberStatus
		for _, b := range splitReplies(data) {
			st := &rolisv1.StatusResponse{}
			if proto.Unmarshal(b, st) != nil {
				continue
			}
			ms = append(ms, MemberStatus{ID: st.GetId(), Status: st})
			_ = RoleName(st.GetRole())
		}
		cand, err := pickCandidate(ms, to)
		if err == nil {
			if !slices.ContainsFunc(ms, func(m MemberStatus) bool { return m.ID == cand.ID }) {
				t.Fatalf("candidate %d is none of the members that answered", cand.ID)
			}
			if to != 0 && cand.ID != to {
				t.Fatalf("asked for member %d, picked %d", to, cand.ID)
			}
			if to == 0 {
				if cand.Status.GetRole() == rolisv1.Role_CATCHING_UP {
					t.Fatalf("picked member %d, which is catching up", cand.ID)
				}
				for _, m := range ms {
					if m.Status.GetRole() != rolisv1.Role_CATCHING_UP && moreAdvanced(m, cand) {
						t.Fatalf("picked member %d; member %d is more advanced", cand.ID, m.ID)
					}
				}
			}
		} else if to == 0 && slices.ContainsFunc(ms, func(m MemberStatus) bool { return m.Status.GetRole() != rolisv1.Role_CATCHING_UP }) {
			t.Fatalf("no candidate among members that are not catching up: %v", err)
		}
		for i := range ms {
			for j := range ms {
				a, b := ms[i].Status.GetWatermark(), ms[j].Status.GetWatermark()
				if CompareLogKey(a, b) != -CompareLogKey(b, a) {
					t.Fatalf("CompareLogKey is not antisymmetric on %v and %v", a, b)
				}
			}
		}

		md := metadata.MD{}
		if trailer != "" {
			md.Append(LeaderTrailer, trailer)
		}
		e := newError("Execute", codes.FailedPrecondition, msg, md)
		if e.Leader != "" && cleanAddr(e.Leader) != e.Leader {
			t.Fatalf("leader %q from message %q and trailer %q is not host:port", e.Leader, msg, trailer)
		}
	})
}
