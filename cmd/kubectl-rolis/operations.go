/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// memberID reads a member given as its pod name ("db-2") or its id ("2"),
// and checks that the cluster has it.
func memberID(c *dbv1.RolisCluster, name string) (int32, error) {
	idText := strings.TrimPrefix(name, c.Name+"-")
	id, err := strconv.ParseInt(idText, 10, 32)
	if err != nil || (idText == name && strings.Contains(name, "-")) {
		return 0, fmt.Errorf("%q names no member of %s: give a pod name (%s) or an id", name, c.Name, specs.PodName(c, 1))
	}
	if n := c.DesiredReplicas(); id < int64(specs.FirstOrdinal) || id >= int64(specs.FirstOrdinal+n) {
		return 0, fmt.Errorf("%s has no member %d: it runs members %d..%d", c.Name, id, specs.FirstOrdinal, specs.FirstOrdinal+n-1)
	}
	return int32(id), nil
}

// mergePatch sends a JSON merge patch to the cluster.
func (o *kubeOptions) mergePatch(ctx context.Context, c *dbv1.RolisCluster, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	obj := &dbv1.RolisCluster{}
	obj.Namespace, obj.Name = c.Namespace, c.Name
	return o.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b))
}

func annotationPatch(key, value string) map[string]any {
	return map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}}
}

func newPromoteCmd(o *kubeOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "promote CLUSTER MEMBER",
		Short: "Switch leadership over to MEMBER (a planned switchover; no acknowledged write is lost)",
		Long: `promote asks the operator for a planned switchover to MEMBER (a pod name
such as db-2, or an id) by setting the rolis.io/promote annotation. The
operator promotes MEMBER through the failover protocol, records the
switchover in status.lastSwitchover and an event, and removes the
annotation. Follow it with kubectl rolis status.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.cluster(ctx, args[0])
			if err != nil {
				return err
			}
			id, err := memberID(c, args[1])
			if err != nil {
				return err
			}
			if slices.Contains(c.Spec.FencedMembers, id) {
				return fmt.Errorf("member %d is fenced: unfence it first", id)
			}
			pod := specs.PodName(c, id)
			if c.Status.Leader == pod {
				fmt.Fprintf(cmd.OutOrStdout(), "%s already leads %s (epoch %d)\n", pod, c.Name, c.Status.Epoch)
				return nil
			}
			if err := o.mergePatch(ctx, c, annotationPatch(dbv1.AnnotationPromote, pod)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "switchover of %s to %s requested (%s=%s)\n", c.Name, pod, dbv1.AnnotationPromote, pod)
			return nil
		},
	}
}

// fencedAfter is spec.fencedMembers after fencing (or unfencing) id.
func fencedAfter(current []int32, id int32, fence bool) []int32 {
	out := []int32{}
	for _, f := range current {
		if f != id {
			out = append(out, f)
		}
	}
	if fence {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func newFenceCmd(o *kubeOptions, fence bool) *cobra.Command {
	use, short := "fence CLUSTER MEMBER", "Take MEMBER out of voting and serving without deleting it"
	if !fence {
		use, short = "unfence CLUSTER MEMBER", "Let a fenced MEMBER vote and serve again"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: `fence adds MEMBER to spec.fencedMembers: the operator removes it from the
voting configuration (a switchover first when it leads) and labels its pod
role=fenced and db.rolis.io/serving=false: out of the client and read
Services. A fence that would leave fewer voters than a majority of the
cluster is refused (condition Fenced, reason FenceRefused). unfence
removes it from the list: the member is added back.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.cluster(ctx, args[0])
			if err != nil {
				return err
			}
			id, err := memberID(c, args[1])
			if err != nil {
				return err
			}
			was := slices.Contains(c.Spec.FencedMembers, id)
			if was == fence {
				state := map[bool]string{true: "already fenced", false: "not fenced"}[fence]
				fmt.Fprintf(cmd.OutOrStdout(), "member %d of %s is %s\n", id, c.Name, state)
				return nil
			}
			next := fencedAfter(c.Spec.FencedMembers, id, fence)
			// resourceVersion in the patch: a concurrent change of the list
			// fails with a conflict instead of being overwritten.
			patch := map[string]any{
				"metadata": map[string]any{"resourceVersion": c.ResourceVersion},
				"spec":     map[string]any{"fencedMembers": next},
			}
			if err := o.mergePatch(ctx, c, patch); err != nil {
				return err
			}
			verb := map[bool]string{true: "fenced", false: "unfenced"}[fence]
			fmt.Fprintf(cmd.OutOrStdout(), "member %d of %s %s (spec.fencedMembers: %v)\n", id, c.Name, verb, next)
			return nil
		},
	}
}

func newRestartCmd(o *kubeOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "restart CLUSTER [MEMBER]",
		Short: "Restart the members the safe way: followers first, then a switchover, then the old leader",
		Long: `restart CLUSTER sets rolis.io/restartedAt (like kubectl rollout restart):
the operator restarts every member, followers one at a time, then switches
over and restarts the old leader. restart CLUSTER MEMBER sets
rolis.io/restartMember: the operator restarts that member only, after a
switchover when it leads, and removes the annotation.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.cluster(ctx, args[0])
			if err != nil {
				return err
			}
			if len(args) == 1 {
				at := time.Now().UTC().Format(time.RFC3339)
				if err := o.mergePatch(ctx, c, annotationPatch(dbv1.AnnotationRestartedAt, at)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rolling restart of %s requested (%s=%s)\n", c.Name, dbv1.AnnotationRestartedAt, at)
				return nil
			}
			id, err := memberID(c, args[1])
			if err != nil {
				return err
			}
			pod := specs.PodName(c, id)
			if err := o.mergePatch(ctx, c, annotationPatch(dbv1.AnnotationRestartMember, pod)); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restart of %s requested (%s=%s)\n", pod, dbv1.AnnotationRestartMember, pod)
			return nil
		},
	}
}
