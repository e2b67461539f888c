/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

// kubectl-rolis is the kubectl plugin of Rolis (`kubectl rolis ...`): the
// state of a RolisCluster, planned switchovers, fencing, restarts, rolisctl
// against the cluster's own endpoints, diagnostic bundles and benchmarks
// (docs/operations.md, "The kubectl plugin"). Every change it makes goes
// through the RolisCluster object (annotations and spec fields the
// operator acts on), so it needs no more rights than editing the object.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl-rolis:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command { return newRootCmdWith(&kubeOptions{}) }

// newRootCmdWith builds the commands on o (tests set its clients).
func newRootCmdWith(o *kubeOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-rolis",
		Short: "Operate Rolis clusters on Kubernetes",
		Long: `kubectl rolis shows and operates RolisClusters.

status, promote, fence, unfence and restart read or change the RolisCluster
object; the operator does the work (a switchover through the failover
protocol, a membership change, a rolling restart) and records it in the
cluster's status and events. cli, report and bench reach pods (port-forward,
logs, a Job).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	o.addFlags(root.PersistentFlags())
	root.AddCommand(
		newStatusCmd(o), newPromoteCmd(o), newFenceCmd(o, true), newFenceCmd(o, false),
		newRestartCmd(o), newCLICmd(o), newReportCmd(o), newBenchCmd(o),
	)
	return root
}
