package main

import (
	"fmt"
	"io"

	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

func newFailoverCmd(g *globals) *cobra.Command {
	var to uint32
	var leaderAddr string
	var o output
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Elect a leader through the admin API (PrepareFailover, DecideEpoch, OpenEpoch, AnnounceLeader)",
		Long: `Drive the failover protocol through the admin API of the members at
--endpoint (admin addresses; list them all when they do not share ports):

  1. status of every member; the candidate is --to, or else the most
     advanced member (highest epoch, then highest watermark);
  2. PrepareFailover(new epoch, last decided record) on the candidate;
  3. DecideEpoch(proposed record) on the candidate: a compare-and-set
     on the members' control stream;
  4. OpenEpoch on the candidate: it opens for writes;
  5. AnnounceLeader to every member.

The control stream decides the epoch records only of clusters run with
rolisd --decider=control-stream (the default): against members run with
--decider=operator (the operator's pods) it stops after step 1, since
they refuse DecideEpoch; fail over through the operator there.

Each step is printed. With -o json|yaml (or --json) the steps go to
stderr and stdout has one object: epoch, leader_id, leader_address,
watermark, watermark_epoch, announce_failures.`,
		Args:    cobra.NoArgs,
		PreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			// --timeout bounds the whole failover (each step must fit in it).
			ctx, cancel := g.withTimeout(cmd.Context())
			defer cancel()
			a, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer a.Close()
			out, progress := cmd.OutOrStdout(), cmd.OutOrStdout()
			if o.structured() {
				progress = cmd.ErrOrStderr() // stdout is the one object
			}
			res, err := a.Failover(ctx, client.FailoverOptions{
				To: to, LeaderClientAddress: leaderAddr,
				Step: func(format string, args ...any) { fmt.Fprintf(progress, format+"\n", args...) },
			})
			if err != nil {
				return fmt.Errorf("failover: %w", err)
			}
			return o.print(out, map[string]any{
				"epoch": res.Record.GetEpoch(), "leader_id": res.Candidate, "leader_address": res.LeaderAddress,
				"watermark": res.Watermark.GetTs(), "watermark_epoch": res.Watermark.GetEpoch(),
				"announce_failures": len(res.AnnounceErrors),
			}, func(out io.Writer) {
				fmt.Fprintf(out, "done: member %d leads epoch %d\n", res.Candidate, res.Record.GetEpoch())
			})
		},
	}
	cmd.Flags().Uint32Var(&to, "to", 0, "member id to promote (default: the most advanced member)")
	cmd.Flags().StringVar(&leaderAddr, "leader-address", "", "client address to announce if the candidate reports none")
	addOutputFlag(cmd, &o, true)
	return cmd
}
