package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

func newMembershipCmd(g *globals) *cobra.Command {
	var o output
	cmd := &cobra.Command{
		Use:   "membership",
		Short: "Show or change the voting members (one member at a time, through the leader)",
		Long: `Without a subcommand, print the configuration in force as the leader
reports it. "add" and "remove" change it by one member through the leader's
ChangeMembership (clusters run without Kubernetes; the operator does the same
when spec.replicas changes). Going from 3 to 5 members takes two adds, back
to 3 two removes: any majority of n members and any majority of n±1 members
share a member, which keeps every decision visible to the next configuration
(docs/replication.md, "Membership").

--endpoint takes admin addresses (list every member's when they do not share
ports, as on one host). With -o json|yaml (or --json): {config, members
(their ids), leader_id}.`,
		Args:              cobra.NoArgs,
		PersistentPreRunE: checkOutput(&o),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.withAdmin(cmd, func(ctx context.Context, a *client.Admin) error {
				cur, err := a.CurrentMembership(ctx)
				if err != nil {
					return err
				}
				return printMembership(cmd.OutOrStdout(), cur.LeaderID, cur.Config, cur.Members, &o)
			})
		},
	}
	addOutputFlagTo(cmd, cmd.PersistentFlags(), &o, true)

	var adminAddr, clientAddr string
	add := &cobra.Command{
		Use:   "add ID=HOST:PORT",
		Short: "Add a member: start it first with --peers listing the new membership",
		Long: `Add one member. Start it first (rolisd --id=ID --peers=... with --peers
listing the current members and itself, at the replication address given
here): it catches up by state transfer, and the leader adds it only once it
holds the whole log (within the leader's timeout; otherwise nothing changes
and the error says how far it got). Adding a member that is already in the
configuration changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := client.ParseMember(args[0])
			if err != nil {
				return usageErrorf("%v", err)
			}
			m.AdminAddress, m.ClientAddress = adminAddr, clientAddr
			return g.withAdmin(cmd, func(ctx context.Context, a *client.Admin) error {
				resp, err := a.AddMember(ctx, m)
				if err != nil {
					return fmt.Errorf("add member %d: %w", m.GetId(), err)
				}
				return printMembership(cmd.OutOrStdout(), 0, resp.GetConfig(), resp.GetMembers(), &o)
			})
		},
	}
	add.Flags().StringVar(&adminAddr, "admin-address", "", "the new member's admin address, shown by status until it is heard from")
	add.Flags().StringVar(&clientAddr, "client-address", "", "the new member's client address, likewise")

	remove := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a member (not the leader: fail over first)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseUint(args[0], 10, 32)
			if err != nil || id == 0 {
				return usageErrorf("member id %q: want a number from 1", args[0])
			}
			return g.withAdmin(cmd, func(ctx context.Context, a *client.Admin) error {
				resp, err := a.RemoveMember(ctx, uint32(id))
				if err != nil {
					return fmt.Errorf("remove member %d: %w", id, err)
				}
				return printMembership(cmd.OutOrStdout(), 0, resp.GetConfig(), resp.GetMembers(), &o)
			})
		},
	}
	cmd.AddCommand(add, remove)
	return cmd
}

// withAdmin runs fn with an admin client of --endpoint, bounded by
// --timeout (withClient's counterpart for the admin API).
func (g *globals) withAdmin(cmd *cobra.Command, fn func(context.Context, *client.Admin) error) error {
	ctx, cancel := g.withTimeout(cmd.Context())
	defer cancel()
	a, err := g.admin(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(ctx, a)
}

// membershipJSON is the -o json|yaml output of membership.
type membershipJSON struct {
	Config   uint64   `json:"config"`
	Members  []uint32 `json:"members"`
	LeaderID uint32   `json:"leader_id"`
}

func printMembership(out io.Writer, leader uint32, config uint64, members []*rolisv1.Member, o *output) error {
	ids := make([]uint32, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.GetId())
	}
	return o.print(out, membershipJSON{Config: config, Members: ids, LeaderID: leader}, func(out io.Writer) {
		fmt.Fprintf(out, "configuration %d:", config)
		for _, m := range members {
			fmt.Fprintf(out, " %d=%s", m.GetId(), m.GetAddress())
		}
		fmt.Fprintln(out)
		if leader != 0 {
			fmt.Fprintf(out, "leader: %d\n", leader)
		}
	})
}
