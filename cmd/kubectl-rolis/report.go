/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// operatorSelector selects the operator's pods as the chart labels them.
const operatorSelector = "app.kubernetes.io/name=rolis-operator,app.kubernetes.io/component=operator"

func newReportCmd(o *kubeOptions) *cobra.Command {
	var out, operatorNS string
	var logLines int64
	var noPods bool
	cmd := &cobra.Command{
		Use:   "report CLUSTER",
		Short: "Write a diagnostic bundle (objects, events, logs, status, metrics) to a tarball",
		Long: `report writes CLUSTER's objects (the RolisCluster, StatefulSet, pods,
Services, ConfigMaps, PVCs, PodDisruptionBudget; Secrets by name only,
never their data), its events, the status report as JSON, the logs of
every member (current and previous container) and of the operator, and a
snapshot of every member's /metrics into a gzipped tarball.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if out == "" {
				out = fmt.Sprintf("rolis-report-%s-%s.tar.gz", args[0], time.Now().UTC().Format("20060102-150405"))
			}
			f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			skipped, err := o.writeReport(ctx, f, args[0], reportOptions{operatorNS: operatorNS, logLines: logLines, pods: !noPods})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(out)
				return err
			}
			for _, s := range skipped {
				fmt.Fprintln(cmd.ErrOrStderr(), "skipped:", s)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "file", "f", "", "tarball to write (default rolis-report-CLUSTER-TIME.tar.gz)")
	cmd.Flags().StringVar(&operatorNS, "operator-namespace", "rolis-system", "namespace of the operator's pods (their logs go in the bundle)")
	cmd.Flags().Int64Var(&logLines, "log-lines", 5000, "last lines of each log")
	cmd.Flags().BoolVar(&noPods, "objects-only", false, "only objects, events and status: no logs, no metrics")
	return cmd
}

type reportOptions struct {
	operatorNS string
	logLines   int64
	pods       bool // logs and metrics (they need running pods)
}

// writeReport writes the bundle; it returns what it could not collect
// (a log of a pod that never ran is not a reason to fail the report).
func (o *kubeOptions) writeReport(ctx context.Context, w io.Writer, name string, ro reportOptions) ([]string, error) {
	in, err := o.readStatus(ctx, name)
	if err != nil {
		return nil, err
	}
	c := in.cluster
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	dir := fmt.Sprintf("rolis-report-%s", c.Name)
	var skipped []string
	put := func(path string, data []byte) error {
		h := &tar.Header{Name: dir + "/" + path, Mode: 0o644, Size: int64(len(data)), ModTime: in.now}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	putYAML := func(path string, obj runtime.Object) error {
		b, err := o.objectYAML(obj)
		if err != nil {
			return err
		}
		return put(path, b)
	}

	status, err := json.MarshalIndent(buildReport(in), "", "  ")
	if err != nil {
		return nil, err
	}
	if err := put("status.json", status); err != nil {
		return nil, err
	}
	if err := putYAML("objects/roliscluster.yaml", c); err != nil {
		return nil, err
	}
	sel := client.MatchingLabels(specs.SelectorLabels(c))
	ns := client.InNamespace(c.Namespace)
	lists := []struct {
		path string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"objects/statefulsets.yaml", &appsv1.StatefulSetList{}, []client.ListOption{ns, sel}},
		{"objects/pods.yaml", &corev1.PodList{}, []client.ListOption{ns, sel}},
		{"objects/services.yaml", &corev1.ServiceList{}, []client.ListOption{ns, sel}},
		{"objects/configmaps.yaml", &corev1.ConfigMapList{}, []client.ListOption{ns, sel}},
		{"objects/persistentvolumeclaims.yaml", &corev1.PersistentVolumeClaimList{}, []client.ListOption{ns, sel}},
		{"objects/poddisruptionbudgets.yaml", &policyv1.PodDisruptionBudgetList{}, []client.ListOption{ns, sel}},
		{"events.yaml", &eventsv1.EventList{}, []client.ListOption{ns}},
	}
	for _, l := range lists {
		if err := o.c.List(ctx, l.list, l.opts...); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", l.path, err))
			continue
		}
		if err := putYAML(l.path, l.list); err != nil {
			return nil, err
		}
	}
	secrets := &corev1.SecretList{}
	if err := o.c.List(ctx, secrets, ns, sel); err != nil {
		skipped = append(skipped, fmt.Sprintf("secret names: %v", err))
	} else {
		var names bytes.Buffer
		for _, s := range secrets.Items {
			fmt.Fprintf(&names, "%s\t%s\n", s.Name, s.Type)
		}
		if err := put("objects/secret-names.txt", names.Bytes()); err != nil {
			return nil, err
		}
	}

	if ro.pods {
		for _, p := range in.pods {
			for _, previous := range []bool{false, true} {
				suffix := ""
				if previous {
					suffix = ".previous"
				}
				b, err := o.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{
					Container: specs.ContainerRun, Previous: previous, TailLines: &ro.logLines}).DoRaw(ctx)
				if err != nil {
					if !previous {
						skipped = append(skipped, fmt.Sprintf("log of %s: %v", p.Name, err))
					}
					continue
				}
				if err := put(fmt.Sprintf("logs/%s%s.log", p.Name, suffix), b); err != nil {
					return nil, err
				}
			}
			// With TLS the metrics port serves HTTPS (docs/operations.md, "Metrics").
			scheme := "http"
			if c.TLSEnabled() {
				scheme = "https"
			}
			b, err := o.cs.CoreV1().Pods(p.Namespace).ProxyGet(scheme, p.Name, fmt.Sprint(specs.MetricsPort), "/metrics", nil).DoRaw(ctx)
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("metrics of %s: %v", p.Name, err))
			} else if err := put(fmt.Sprintf("metrics/%s.prom", p.Name), b); err != nil {
				return nil, err
			}
		}
		ops, err := o.cs.CoreV1().Pods(ro.operatorNS).List(ctx, metav1ListOptions(operatorSelector))
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("operator pods in %s: %v", ro.operatorNS, err))
		} else {
			for _, p := range ops.Items {
				b, err := o.cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &ro.logLines}).DoRaw(ctx)
				if err != nil {
					skipped = append(skipped, fmt.Sprintf("log of operator %s: %v", p.Name, err))
					continue
				}
				if err := put(fmt.Sprintf("logs/operator-%s.log", p.Name), b); err != nil {
					return nil, err
				}
			}
		}
	}
	if len(skipped) > 0 {
		var b bytes.Buffer
		for _, s := range skipped {
			fmt.Fprintln(&b, s)
		}
		if err := put("skipped.txt", b.Bytes()); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return skipped, gz.Close()
}

// objectYAML prints an object (or list) with its apiVersion and kind.
func (o *kubeOptions) objectYAML(obj runtime.Object) ([]byte, error) {
	if gvk, err := apiutil.GVKForObject(obj, o.c.Scheme()); err == nil {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	if c, ok := obj.(*dbv1.RolisCluster); ok {
		c.ManagedFields = nil
	}
	return yaml.Marshal(obj)
}
