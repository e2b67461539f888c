/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/pkg/workloads"
)

type benchOptions struct {
	workload string
	image    string
	seconds  int
	extra    []string
	timeout  time.Duration
	keep     bool
}

func newBenchCmd(o *kubeOptions) *cobra.Command {
	bo := &benchOptions{}
	cmd := &cobra.Command{
		Use:   "bench CLUSTER [-- ROLISCTL-BENCH-FLAGS...]",
		Short: "Run rolisctl bench as a Job against the client Service, stream its log, then delete the Job",
		Long: `bench runs "rolisctl bench" from the tools image (rolis/rolis-tools) in a Job
in the cluster's namespace, against the cluster's client Service (with the
client certificate on a cluster with TLS). It streams the Job's log
(progress each second, then the summary) and deletes the Job. Flags after
-- go to rolisctl bench, e.g.

  kubectl rolis bench db --seconds=30 -- --concurrency=4 --read-ratio=0.9
  kubectl rolis bench db --seconds=12 -- --timeline=100ms --timeout=1s --json

(the second: the JSON line with the outcomes per 100 ms bucket, for a
failover timeline; docs/benchmarks.md, "Failover timeline").`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.cluster(ctx, args[0])
			if err != nil {
				return err
			}
			bo.extra = args[1:]
			job, err := benchJob(c, bo)
			if err != nil {
				return err
			}
			return o.runJob(ctx, job, bo, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&bo.workload, "workload", "ycsbpp", "workload of rolisctl bench: "+workloads.List()+
		" (all but ycsbpp run as server-side procedures, set up and loaded first with rolisctl bench --load)")
	f.StringVar(&bo.image, "image", "", "tools image (default: the cluster's rolisd image with rolisd replaced by rolis-tools)")
	f.IntVar(&bo.seconds, "seconds", 10, "measured seconds")
	f.DurationVar(&bo.timeout, "timeout", 10*time.Minute, "give up on the Job after this long")
	f.BoolVar(&bo.keep, "keep", false, "keep the Job and its pod afterwards")
	return cmd
}

// toolsImage is the tools image beside the cluster's rolisd image, with
// the same tag ("" when the image is not named rolisd, or pinned by
// digest: a digest names one image only).
func toolsImage(rolisd string) string {
	i := strings.LastIndex(rolisd, "/")
	name, tag, _ := strings.Cut(rolisd[i+1:], ":")
	if name != "rolisd" || strings.Contains(rolisd, "@") {
		return ""
	}
	if tag != "" {
		tag = ":" + tag
	}
	return rolisd[:i+1] + "rolis-tools" + tag
}

// benchJob is the Job of a benchmark run: a pure function of the cluster
// and the options.
func benchJob(c *dbv1.RolisCluster, bo *benchOptions) (*batchv1.Job, error) {
	if !workloads.Known(bo.workload) {
		return nil, fmt.Errorf("--workload %q: rolisctl bench runs %s", bo.workload, workloads.List())
	}
	if bo.seconds <= 0 {
		return nil, fmt.Errorf("--seconds must be positive")
	}
	image := bo.image
	if image == "" {
		image = toolsImage(c.Spec.Image)
	}
	if image == "" {
		return nil, fmt.Errorf("cannot derive the tools image from %q: pass --image", c.Spec.Image)
	}
	endpoint := fmt.Sprintf("%s.%s.svc:%d", specs.ClientServiceName(c), c.Namespace, specs.ClientPort)
	args := []string{"bench", "--workload=" + bo.workload, fmt.Sprintf("--seconds=%d", bo.seconds)}
	if bo.workload != "ycsbpp" {
		// A procedure workload's tables are set up and filled by the run
		// itself (ycsbpp loads its keys unless told --no-load).
		args = append(args, "--load")
	}
	args = append(args, bo.extra...)
	env := []corev1.EnvVar{{Name: "ROLISCTL_ENDPOINT", Value: endpoint}}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if c.TLSEnabled() {
		const dir = "/etc/rolis/client-tls"
		volumes = append(volumes, corev1.Volume{Name: "client-tls", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: specs.ClientSecretName(c)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "client-tls", MountPath: dir, ReadOnly: true})
		env = append(env,
			corev1.EnvVar{Name: "ROLISCTL_TLS_CA", Value: dir + "/ca.crt"},
			corev1.EnvVar{Name: "ROLISCTL_TLS_CERT", Value: dir + "/tls.crt"},
			corev1.EnvVar{Name: "ROLISCTL_TLS_KEY", Value: dir + "/tls.key"})
	}
	labels := map[string]string{
		specs.LabelName: "rolis-bench", specs.LabelInstance: c.Name, specs.LabelManagedBy: "kubectl-rolis",
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: c.Name + "-bench-", Namespace: c.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](3600), // if the plugin dies before deleting it
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:   corev1.RestartPolicyNever,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(specs.RunAsUser)},
					Containers: []corev1.Container{{
						Name: "bench", Image: image, ImagePullPolicy: c.Spec.ImagePullPolicy,
						Args: args, Env: env, VolumeMounts: mounts,
						SecurityContext: specs.RestrictedContainerSecurity(),
					}},
					Volumes: volumes,
				},
			},
		},
	}, nil
}

// runJob creates the Job, streams its pod's log, waits for its end and
// deletes it.
func (o *kubeOptions) runJob(ctx context.Context, job *batchv1.Job, bo *benchOptions, out, errOut io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(ctx, bo.timeout)
	defer cancel()
	if err := o.c.Create(ctx, job); err != nil {
		return fmt.Errorf("creating the bench Job: %w", err)
	}
	fmt.Fprintf(errOut, "job/%s created\n", job.Name)
	if !bo.keep {
		defer func() {
			bg := metav1.DeletePropagationBackground
			derr := o.c.Delete(context.WithoutCancel(ctx), job, &client.DeleteOptions{PropagationPolicy: &bg})
			if derr == nil {
				fmt.Fprintf(errOut, "job/%s deleted\n", job.Name)
			} else if err == nil {
				err = fmt.Errorf("deleting job/%s: %w", job.Name, derr)
			}
		}()
	}
	pod, err := o.waitJobPod(ctx, job)
	if err != nil {
		return err
	}
	stream, err := o.cs.CoreV1().Pods(job.Namespace).GetLogs(pod, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		return fmt.Errorf("log of %s: %w", pod, err)
	}
	_, _ = io.Copy(out, stream)
	_ = stream.Close()
	for {
		j := &batchv1.Job{}
		if err := o.c.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		if j.Status.Succeeded > 0 {
			return nil
		}
		if j.Status.Failed > 0 {
			return fmt.Errorf("the bench Job failed (its log is above)")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for job/%s: %w", job.Name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// waitJobPod waits until the Job's pod runs or ended, and names it.
func (o *kubeOptions) waitJobPod(ctx context.Context, job *batchv1.Job) (string, error) {
	for {
		pods := &corev1.PodList{}
		if err := o.c.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{"job-name": job.Name}); err != nil {
			return "", err
		}
		for _, p := range pods.Items {
			switch p.Status.Phase {
			case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
				return p.Name, nil
			}
			for _, cs := range p.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" || w.Reason == "InvalidImageName") {
					return "", fmt.Errorf("bench pod %s: %s: %s", p.Name, w.Reason, w.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for the pod of job/%s: %w", job.Name, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
