// rolisctl is the command-line client of rolisd: reads and writes,
// transactions, cluster status and failover, and load and benchmark runs.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rolisdb/rolis/pkg/client"
	"github.com/spf13/cobra"
)

// globals are the flags every command takes.
type globals struct {
	endpoints  string
	tlsCA      string
	tlsCert    string
	tlsKey     string
	serverName string
	timeout    time.Duration
}

// version is set at build time (make go-build: -ldflags -X main.version=...).
var version = "0.1.0+unknown"

func main() {
	if err := newRootCmd().Execute(); err != nil {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "rolisctl:", msg)
		}
		os.Exit(exitCodeOf(err))
	}
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:   "rolisctl",
		Short: "Command-line client of rolisd",
		Long: `rolisctl talks to rolisd over gRPC.

--endpoint takes one or more comma-separated addresses: client addresses
(--listen of rolisd) for get, put, delete, scan, txn, load and bench, which
follow not-leader redirects to the leader; admin addresses (--admin-listen)
for status, failover and membership.

Commands that print data take -o table|json|yaml. Exit codes: 0 ok, 1 any
other failure, 2 bad usage or input, 3 not found, 4 conflict (a condition
failed, a transaction aborted), 5 unavailable (no server answers in time).
Shell completion: rolisctl completion bash|zsh|fish|powershell.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return exitError{exitUsage, err.Error()} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.endpoints, "endpoint", envOr("ROLISCTL_ENDPOINT", "127.0.0.1:7070"), "comma-separated server addresses [$ROLISCTL_ENDPOINT]")
	pf.StringVar(&g.tlsCA, "tls-ca", os.Getenv("ROLISCTL_TLS_CA"), "PEM CA bundle that signs the server certificates (enables TLS) [$ROLISCTL_TLS_CA]")
	pf.StringVar(&g.tlsCert, "tls-cert", os.Getenv("ROLISCTL_TLS_CERT"), "PEM client certificate for mutual TLS [$ROLISCTL_TLS_CERT]")
	pf.StringVar(&g.tlsKey, "tls-key", os.Getenv("ROLISCTL_TLS_KEY"), "PEM private key of --tls-cert [$ROLISCTL_TLS_KEY]")
	pf.StringVar(&g.serverName, "tls-server-name", "", "name to verify in the server certificate (default: the endpoint's host)")
	pf.DurationVar(&g.timeout, "timeout", 10*time.Second, "deadline of each request (get, put, txn, status, failover steps...)")

	root.AddCommand(
		newGetCmd(g), newPutCmd(g), newDeleteCmd(g), newScanCmd(g), newTxnCmd(g),
		newStatusCmd(g), newFailoverCmd(g), newMembershipCmd(g), newLoadCmd(g), newBenchCmd(g),
	)
	usageOnBadArgs(root)
	return root
}

// usageOnBadArgs makes a wrong number of arguments exit with exitUsage.
func usageOnBadArgs(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			if err := args(cmd, a); err != nil {
				return exitError{exitUsage, err.Error()}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageOnBadArgs(sub)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (g *globals) config() client.Config {
	var eps []string
	for _, e := range strings.Split(g.endpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return client.Config{Endpoints: eps, CAFile: g.tlsCA, CertFile: g.tlsCert, KeyFile: g.tlsKey, ServerName: g.serverName}
}

func (g *globals) client(ctx context.Context, mod func(*client.Config)) (*client.Client, error) {
	cfg := g.config()
	if mod != nil {
		mod(&cfg)
	}
	return client.New(ctx, cfg)
}

func (g *globals) admin(ctx context.Context) (*client.Admin, error) {
	return client.NewAdmin(ctx, g.config())
}

// withTimeout bounds one request by --timeout.
func (g *globals) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.timeout)
}
