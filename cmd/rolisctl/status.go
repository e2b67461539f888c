package main

import (
	"encoding/json"
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
	PromisedEpoch  uint64  `json:"promised_epoch"`
	LeaderID       uint32  `json:"leader_id"`
	LeaderAddress  string  `json:"leader_address,omitempty"`
	Healthy        bool    `json:"healthy"`
	Reachable      bool    `json:"reachable"`
	AdminAddress   string  `json:"admin_address,omitempty"`
	Address        string  `json:"address,omitempty"` // replication address
	Version        string  `json:"version,omitempty"`
	CommittedTxns  uint64  `json:"committed_txns"`
	UptimeSeconds  uint64  `json:"uptime_seconds"`
	Streams        int     `json:"streams"`
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show every member: id, role, epoch, watermark, lag",
		Long: `Ask the admin endpoint(s) given by --endpoint for their status, and the
other members they report as well (their admin address is guessed from
their replication host and the admin port given; list every admin address
in --endpoint when the members do not share ports, as on one host).

With --json the last line is a JSON array with one object per member:
id, role (leader, follower, candidate, catching_up, standalone, unknown),
epoch, watermark (ts of the commit watermark G; watermark_epoch is its
epoch), replayed, lag (leader's watermark ts minus the member's replayed ts,
in ts units; null when unknown), healthy, reachable, ...`,
		Args: cobra.NoArgs,
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
			if asJSON {
				b, _ := json.Marshal(rows)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			} else {
				printStatusTable(cmd.OutOrStdout(), rows)
			}
			if err != nil {
				return exitError{2, "no member reachable: " + err.Error()}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (one object per member) as the last line")
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
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func printStatusTable(out io.Writer, rows []memberJSON) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tROLE\tEPOCH\tWATERMARK\tREPLAYED\tLAG\tHEALTHY\tADMIN\tVERSION")
	for _, r := range rows {
		lag := "-"
		if r.Lag != nil {
			lag = fmt.Sprint(*r.Lag)
		}
		if !r.Reachable {
			fmt.Fprintf(w, "%d\t%s\t-\t-\t-\t-\t-\t%s\t(%s)\n", r.ID, r.Role, r.AdminAddress, r.Error)
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%d\t%d.%d\t%d.%d\t%s\t%v\t%s\t%s\n", r.ID, r.Role, r.Epoch,
			r.WatermarkEpoch, r.Watermark, r.ReplayedEpoch, r.Replayed, lag, r.Healthy, r.AdminAddress, r.Version)
	}
	w.Flush()
	for _, r := range rows {
		if r.DataLossSuspected {
			fmt.Fprintf(out, "member %d: DATA LOSS SUSPECTED: %s\n", r.ID, r.DataLossReason)
		}
	}
}
