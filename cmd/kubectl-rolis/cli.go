/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// adminCommands of rolisctl talk to the admin port; the others to the
// client port.
var adminCommands = map[string]bool{"status": true, "failover": true, "membership": true}

func newCLICmd(o *kubeOptions) *cobra.Command {
	var rolisctl, member string
	cmd := &cobra.Command{
		Use:   "cli CLUSTER -- ROLISCTL-ARGS...",
		Short: "Run rolisctl against the cluster, through a port-forward, with the cluster's client certificate",
		Long: `cli port-forwards to the leader's pod (the pod the client Service selects)
or to --member, and runs rolisctl with --endpoint set to the forwarded
client port (admin port for status, failover and membership) and, on a
cluster with TLS, the client certificate of the cluster's
<cluster>-client-tls Secret. Example:

  kubectl rolis cli db -- status
  kubectl rolis cli db -- put greeting hello`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := o.cluster(ctx, args[0])
			if err != nil {
				return err
			}
			pod, err := o.targetPod(ctx, c, member)
			if err != nil {
				return err
			}
			bin, err := findRolisctl(rolisctl)
			if err != nil {
				return err
			}
			env, cleanup, err := o.tlsEnv(ctx, c)
			if err != nil {
				return err
			}
			defer cleanup()
			ports, stop, err := o.forward(ctx, pod, []int32{specs.ClientPort, specs.AdminPort}, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer stop()
			port := ports[specs.ClientPort]
			if adminCommands[args[1]] {
				port = ports[specs.AdminPort]
			}
			env = append(env, fmt.Sprintf("ROLISCTL_ENDPOINT=127.0.0.1:%d", port))
			run := exec.CommandContext(ctx, bin, args[1:]...)
			run.Env = append(os.Environ(), env...)
			run.Stdin, run.Stdout, run.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := run.Run(); err != nil {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return fmt.Errorf("rolisctl exited with %d", ee.ExitCode())
				}
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rolisctl, "rolisctl", "", "rolisctl binary (default: rolisctl beside kubectl-rolis, else on $PATH)")
	cmd.Flags().StringVar(&member, "member", "", "forward to this member's pod instead of the leader's")
	return cmd
}

// targetPod is the member's pod, or the pod labelled role=leader.
func (o *kubeOptions) targetPod(ctx context.Context, c *dbv1.RolisCluster, member string) (string, error) {
	if member != "" {
		id, err := memberID(c, member)
		if err != nil {
			return "", err
		}
		return specs.PodName(c, id), nil
	}
	sel := specs.SelectorLabels(c)
	sel[specs.LabelRole] = specs.RoleLeader
	pods := &corev1.PodList{}
	if err := o.c.List(ctx, pods, client.InNamespace(c.Namespace), client.MatchingLabels(sel)); err != nil {
		return "", err
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("%s has no pod labelled %s=%s (no serving leader?): see kubectl rolis status %s, or pass --member",
			c.Name, specs.LabelRole, specs.RoleLeader, c.Name)
	}
	return pods.Items[0].Name, nil
}

func findRolisctl(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "rolisctl")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	p, err := exec.LookPath("rolisctl")
	if err != nil {
		return "", errors.New("rolisctl not found beside kubectl-rolis or on $PATH: install it (make build puts it in bin/) or pass --rolisctl")
	}
	return p, nil
}

// tlsEnv writes the cluster's client certificate to a private temporary
// folder and returns rolisctl's TLS variables for it (none without TLS).
func (o *kubeOptions) tlsEnv(ctx context.Context, c *dbv1.RolisCluster) ([]string, func(), error) {
	if !c.TLSEnabled() {
		return nil, func() {}, nil
	}
	s := &corev1.Secret{}
	if err := o.c.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.ClientSecretName(c)}, s); err != nil {
		return nil, nil, fmt.Errorf("the client certificate of %s: %w", c.Name, err)
	}
	dir, err := os.MkdirTemp("", "kubectl-rolis-tls-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	files := map[string]string{"ca.crt": "ROLISCTL_TLS_CA", corev1.TLSCertKey: "ROLISCTL_TLS_CERT", corev1.TLSPrivateKeyKey: "ROLISCTL_TLS_KEY"}
	var env []string
	for key, variable := range files {
		if len(s.Data[key]) == 0 {
			cleanup()
			return nil, nil, fmt.Errorf("secret %s has no %s", s.Name, key)
		}
		p := filepath.Join(dir, key)
		if err := os.WriteFile(p, s.Data[key], 0o600); err != nil {
			cleanup()
			return nil, nil, err
		}
		env = append(env, variable+"="+p)
	}
	return env, cleanup, nil
}
