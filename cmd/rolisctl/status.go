package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

// memberJSON is one element of `status --json`. id, role, epoch and
// watermark are a stable interface; watermark is the ts of the member's
// commit watermark G (its epoch is watermark_epoch).
type memberJSON struct {
	ID             uint32  `json:"id"`
	Role           string  `json:"role"`
	Epoch          uint64  `json:"epoch"`
	Watermark      uint64  `json:"watermark"`
	WatermarkEpoch uint64  `json:"watermark_epoch"`
	Replayed       uint64  `json:"replayed"`
	ReplayedEpoch  uint64  `json:"replayed_epoch"`
	Lag            *uint64 `json:"lag"` // leader's watermark ts - this member's replayed ts; null if unknown
	// LagSeconds is Lag in seconds of the leader's commit clock, known only
	// when both keys are of one epoch (ts of different epochs come from
	// different leaders' clocks); null otherwise.
	LagSeconds    *float64 `json:"lag_seconds"`
	PromisedEpoch uint64   `json:"promised_epoch"`
	// Decider is who decides the epoch records (rolisd --decider:
	// control-stream or operator).
	Decider       string `json:"decider,omitempty"`
	LeaderID      uint32 `json:"leader_id"`
	LeaderAddress string `json:"leader_address,omitempty"`
	Healthy       bool   `json:"healthy"`
	Reachable     bool   `json:"reachable"`
	AdminAddress  string `json:"admin_address,omitempty"`
	Address       string `json:"address,omitempty"` // replication address
	Version       string `json:"version,omitempty"`
	CommittedTxns uint64 `json:"committed_txns"`
	UptimeSeconds uint64 `json:"uptime_seconds"`
	Streams       int    `json:"streams"`
	// Durability (docs/operations.md, "Durability"): disk or memory, the
	// data directory and the start-up recovery's summary; a member that came
	// back empty while too few members hold the cluster's data says so.
	Durability        string `json:"durability,omitempty"`
	DataDir           string `json:"data_dir,omitempty"`
	Recovery          string `json:"recovery,omitempty"`
	DataLossSuspected bool   `json:"data_loss_suspected,omitempty"`
	DataLossReason    string `json:"data_loss_reason,omitempty"`
	Error             string `json:"error,omitempty"`
}

func newStatusCmd(g *globals) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every member: id, role, epoch, watermark, lag in seconds, decider",
		Long: `Ask the admin endpoint(s) given by --endpoint for their status, and the
other members they report as well (their admin address is guessed from
their replication host and the admin port given; list every admin address
in --endpoint when the members do not share ports, as on one host).

The table's LAG is how far the member's replay is behind the leader's
commit watermark, in seconds of the leader's clock ("-" when unknown).

With -o json (or --json) the output is a JSON array with one object per
member: id, role (leader, follower, candidate, catching_up, standalone,
unknown), epoch, watermark (ts of the commit watermark G; watermark_epoch is
its epoch), replayed, lag (leader's watermark ts minus the member's replayed
ts, in ts units; null when unknown), lag_seconds, decider, healthy,
reachable, ... -o yaml prints the same as YAML.`,
		Args:    cobra.NoArgs,
		PreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := g.withTimeout(cmd.Context())
			defer cancel()
			a, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			members, err := a.ClusterStatus(ctx)
			rows := statusRows(members)
			if perr := o.print(cmd.OutOrStdout(), rows, func(out io.Writer) { printStatusTable(out, rows) }); perr != nil {
				return perr
			}
			if err != nil {
				return exitError{exitUnavailable, "no member reachable: " + err.Error()}
			}
			return nil
		},
	}
	addOutputFlag(cmd, &o, true)
	return cmd
}

func statusRows(members []client.MemberStatus) []memberJSON {
	// The leader's watermark is the reference for lag.
	var leaderWM *rolisv1.LogKey
	for _, m := range members {
		if r := m.Status.GetRole(); m.Reachable() && (r == rolisv1.Role_LEADER || r == rolisv1.Role_STANDALONE) {
			if leaderWM == nil || client.CompareLogKey(m.Status.GetWatermark(), leaderWM) > 0 {
				leaderWM = m.Status.GetWatermark()
			}
		}
	}
	rows := make([]memberJSON, 0, len(members))
	for _, m := range members {
		row := memberJSON{ID: m.ID, Role: "unknown", AdminAddress: m.AdminAddress, Address: m.ReplicationAddress, Reachable: m.Reachable()}
		if m.Err != nil {
			row.Error = m.Err.Error()
		}
		if st := m.Status; st != nil {
			row.Role = client.RoleName(st.GetRole())
			row.Epoch = st.GetEpoch()
			row.Watermark, row.WatermarkEpoch = st.GetWatermark().GetTs(), st.GetWatermark().GetEpoch()
			row.Replayed, row.ReplayedEpoch = st.GetReplayed().GetTs(), st.GetReplayed().GetEpoch()
			row.PromisedEpoch = st.GetPromisedEpoch()
			row.Decider = st.GetDecider()
			row.LeaderID, row.LeaderAddress = st.GetLeaderId(), st.GetLeaderAddress()
			row.Healthy, row.Version = st.GetHealthy(), st.GetVersion()
			row.CommittedTxns, row.UptimeSeconds = st.GetCommittedTxns(), st.GetUptimeSeconds()
			row.Streams = len(st.GetStreams())
			row.Durability, row.DataDir, row.Recovery = st.GetDurability(), st.GetDataDir(), st.GetRecovery()
			row.DataLossSuspected, row.DataLossReason = st.GetDataLossSuspected(), st.GetDataLossReason()
			for _, mem := range st.GetMembers() {
				if mem.GetId() == st.GetId() && row.Address == "" {
					row.Address = mem.GetAddress()
				}
			}
			if leaderWM != nil {
				var lag uint64
				// A standalone node or a leader has applied what it committed.
				applied := st.GetReplayed().GetTs()
				if r := st.GetRole(); r == rolisv1.Role_LEADER || r == rolisv1.Role_STANDALONE {
					applied = max(applied, st.GetWatermark().GetTs())
				}
				if leaderWM.GetTs() > applied {
					lag = leaderWM.GetTs() - applied
				}
				row.Lag = &lag
				if leaderWM.GetEpoch() == st.GetReplayed().GetEpoch() {
					secs := lagSeconds(lag)
					row.LagSeconds = &secs
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// tsWorkerBits is the low bits of a commit ts that hold the worker id; the
// rest is nanoseconds of the leader's clock (docs/architecture.md, the
// commit protocol: ts = (now_ns << 8) | worker_id).
const tsWorkerBits = 8

// lagSeconds turns a difference of two ts of one epoch into seconds.
func lagSeconds(lag uint64) float64 {
	return float64(lag>>tsWorkerBits) / 1e9
}

// formatLag prints seconds to the millisecond ("0.004s").
func formatLag(secs *float64) string {
	if secs == nil {
		return "-"
	}
	return fmt.Sprintf("%.3fs", *secs)
}

func printStatusTable(out io.Writer, rows []memberJSON) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tROLE\tEPOCH\tWATERMARK\tREPLAYED\tLAG\tHEALTHY\tDECIDER\tADMIN\tVERSION")
	for _, r := range rows {
		if !r.Reachable {
			fmt.Fprintf(w, "%d\t%s\t-\t-\t-\t-\t-\t-\t%s\t(%s)\n", r.ID, r.Role, r.AdminAddress, r.Error)
			continue
		}
		decider := r.Decider
		if decider == "" {
			decider = "-"
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%d.%d\t%d.%d\t%s\t%v\t%s\t%s\t%s\n", r.ID, r.Role, r.Epoch,
			r.WatermarkEpoch, r.Watermark, r.ReplayedEpoch, r.Replayed, formatLag(r.LagSeconds), r.Healthy, decider,
			r.AdminAddress, r.Version)
	}
	w.Flush()
	for _, r := range rows {
		if r.DataLossSuspected {
			fmt.Fprintf(out, "member %d: DATA LOSS SUSPECTED: %s\n", r.ID, r.DataLossReason)
		}
	}
}
