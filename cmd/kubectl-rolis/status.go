/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

func newStatusCmd(o *kubeOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status CLUSTER",
		Short: "Show a RolisCluster: spec against actual state, members, failovers, certificates, volumes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			in, err := o.readStatus(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printReport(cmd.OutOrStdout(), buildReport(in), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table, json or yaml")
	return cmd
}

func checkOutput(o string) error {
	switch o {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("--output %q: use table, json or yaml", o)
}

// readStatus reads the cluster and what belongs to it.
func (o *kubeOptions) readStatus(ctx context.Context, name string) (statusInputs, error) {
	c, err := o.cluster(ctx, name)
	if err != nil {
		return statusInputs{}, err
	}
	in := statusInputs{cluster: c, now: time.Now()}
	sel := client.MatchingLabels(specs.SelectorLabels(c))
	pods := &corev1.PodList{}
	if err := o.c.List(ctx, pods, client.InNamespace(c.Namespace), sel); err != nil {
		return in, fmt.Errorf("pods: %w", err)
	}
	in.pods = pods.Items
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := o.c.List(ctx, pvcs, client.InNamespace(c.Namespace), sel); err != nil {
		return in, fmt.Errorf("persistent volume claims: %w", err)
	}
	in.pvcs = pvcs.Items
	if c.TLSEnabled() {
		for _, n := range []string{specs.ServerSecretName(c), specs.ClientSecretName(c)} {
			s := &corev1.Secret{}
			err := o.c.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: n}, s)
			switch {
			case apierrors.IsNotFound(err):
				in.secrets = append(in.secrets, corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: n}})
			case apierrors.IsForbidden(err):
				// Reading Secrets may not be allowed; the rest still helps.
			case err != nil:
				return in, fmt.Errorf("secret %s: %w", n, err)
			default:
				in.secrets = append(in.secrets, *s)
			}
		}
	}
	evs := &eventsv1.EventList{}
	if err := o.c.List(ctx, evs, client.InNamespace(c.Namespace)); err != nil && !apierrors.IsForbidden(err) {
		return in, fmt.Errorf("events: %w", err)
	}
	in.events = evs.Items
	return in, nil
}

func printReport(w io.Writer, r Report, output string) error {
	switch output {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return printTable(w, r)
}

func printTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("Cluster:\t%s/%s\n", r.Namespace, r.Cluster)
	p("Phase:\t%s (Ready=%s)\n", r.Phase, r.Ready)
	p("Leader:\t%s (epoch %d, watermark %s)\n", orNone(r.Leader), r.Epoch, key(r.Watermark))
	s := r.Spec
	p("Members:\t%d wanted, %d pods, %d ready\n", s.Replicas, s.RunningMembers, s.ReadyMembers)
	p("Image:\t%s (running: %s)\n", s.Image, orNone(strings.Join(s.RunningImages, ", ")))
	p("Durability:\t%s\n", s.Durability)
	if s.Generation != s.ObservedGen {
		p("Spec:\tgeneration %d, the operator has seen %d\n", s.Generation, s.ObservedGen)
	}
	if len(s.FencedMembers) > 0 || len(r.Fenced) > 0 {
		p("Fenced:\tspec %v, out of the configuration %v\n", s.FencedMembers, r.Fenced)
	}
	if ls := r.LastSwitchover; ls != nil {
		p("Last switchover:\t%s → %s (epoch %d, %s, %s)\n", ls.From, ls.To, ls.Epoch, ls.Reason, ls.Time.UTC().Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nMEMBERS")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tROLE\tEPOCH\tWATERMARK\tLAG\tHEALTHY\tVERSION\tPOD READY\tRESTARTS\tNODE\tMESSAGE")
	for _, m := range r.Members {
		lag := "-"
		if m.LagSeconds != nil {
			lag = fmt.Sprintf("%.3fs", *m.LagSeconds)
		}
		role := m.Role
		if m.PodRoleLabel == specs.RoleFenced {
			role += " (fenced)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%v\t%s\t%v\t%d\t%s\t%s\n", m.Name, m.ID, role, m.Epoch, key(m.Watermark),
			lag, m.Healthy, orDash(m.Version), m.PodReady, m.Restarts, orDash(m.Node), m.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nRECENT FAILOVERS")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Failovers) == 0 {
		fmt.Fprintln(tw, "none recorded in the events")
	} else {
		fmt.Fprintln(tw, "TIME\tKIND\tNEW LEADER\tGAP\tDETECTED")
		for _, f := range r.Failovers {
			gap := "-"
			if f.GapSeconds != nil {
				gap = fmt.Sprintf("%.2fs", *f.GapSeconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Time.UTC().Format(time.RFC3339), f.Kind, f.Leader, gap, f.Detected)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(r.Certificates) > 0 {
		fmt.Fprintln(w, "\nCERTIFICATES")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SECRET\tSUBJECT\tEXPIRES IN")
		for _, cr := range r.Certificates {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", cr.Secret, orDash(cr.Subject), cr.ExpiresIn)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}

	fmt.Fprintln(w, "\nVOLUMES")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PVC\tSTATUS\tCAPACITY\tSTORAGE CLASS\tVOLUME")
	for _, v := range r.Volumes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", v.Name, v.Phase, orDash(v.Capacity), orDash(v.StorageClass), orDash(v.Volume))
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nCONDITIONS")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range r.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return tw.Flush()
}

func key(k *dbv1.LogKey) string {
	if k == nil {
		return "-"
	}
	return fmt.Sprintf("(%d,%d)", k.Epoch, k.TS)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
