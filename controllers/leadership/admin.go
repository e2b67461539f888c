/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

// Package leadership holds what the operator knows about leaders: probing the
// members' admin API, choosing the most advanced replica, the failover state
// machine that decides epoch records by compare-and-set, the Lease that
// serializes promotions, and the plans for membership changes and rolling
// restarts. Everything here talks to rolisd only through AdminClient and to
// Kubernetes only through small interfaces, so tests can run it against
// fakes or against real rolisd processes on loopback.
package leadership

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// AdminClient is the part of rolisd's admin API that the operator drives.
// Keep it small: a test double implements it in a few lines, and a later
// replication test can run the same operator code against a 3-process
// cluster on loopback.
type AdminClient interface {
	Status(ctx context.Context) (*rolisv1.StatusResponse, error)
	PrepareFailover(ctx context.Context, req *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error)
	OpenEpoch(ctx context.Context, req *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error)
	AnnounceLeader(ctx context.Context, req *rolisv1.AnnounceLeaderRequest) error
	ChangeMembership(ctx context.Context, req *rolisv1.ChangeMembershipRequest) (*rolisv1.ChangeMembershipResponse, error)
	Close() error
}

// Target names one member of one cluster.
type Target struct {
	Cluster *dbv1.RolisCluster
	// ID is the member id, which is the pod's ordinal.
	ID int32
	// Pod is the member's pod; nil when the pod does not exist.
	Pod *corev1.Pod
}

// Dialer opens an admin connection to a member.
type Dialer interface {
	Dial(ctx context.Context, t Target) (AdminClient, error)
}

// Resolver maps a member to the host:port of its admin API.
type Resolver interface {
	AdminAddress(t Target) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(t Target) (string, error)

// AdminAddress implements Resolver.
func (f ResolverFunc) AdminAddress(t Target) (string, error) { return f(t) }

// PodIPResolver reaches members at their pod IP, which is what an operator
// running inside the cluster sees first (before DNS of a new pod propagates).
type PodIPResolver struct{ Port int32 }

// AdminAddress implements Resolver.
func (r PodIPResolver) AdminAddress(t Target) (string, error) {
	if t.Pod == nil {
		return "", fmt.Errorf("pod of member %d does not exist", t.ID)
	}
	if t.Pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP yet", t.Pod.Name)
	}
	return net.JoinHostPort(t.Pod.Status.PodIP, strconv.Itoa(int(r.Port))), nil
}

// TLSSource returns the client TLS configuration for a cluster whose members
// use TLS (nil, nil when they do not).
type TLSSource func(ctx context.Context, c *dbv1.RolisCluster) (*tls.Config, error)

// GRPCDialer dials rolisd's admin API over gRPC.
type GRPCDialer struct {
	Resolver Resolver
	TLS      TLSSource
}

// Dial implements Dialer. gRPC connects lazily; errors surface on the first
// call, bounded by the caller's context.
func (d GRPCDialer) Dial(ctx context.Context, t Target) (AdminClient, error) {
	addr, err := d.Resolver.AdminAddress(t)
	if err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	fallback := false
	if d.TLS != nil && t.Cluster != nil && t.Cluster.TLSEnabled() {
		cfg, err := d.TLS(ctx, t.Cluster)
		if err != nil {
			return nil, fmt.Errorf("client TLS for %s: %w", t.Cluster.Name, err)
		}
		if cfg != nil {
			creds = credentials.NewTLS(cfg)
			fallback = t.Cluster.TLSTransition()
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithConnectParams(connectParams()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if fallback && !connectsWithin(ctx, conn, tlsFallbackWait) {
		// A member that has not moved to TLS yet (docs/operations.md,
		// "Turning TLS on or off for a running cluster"): plaintext. The
		// next Dial tries TLS again.
		_ = conn.Close()
		if conn, err = grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithConnectParams(connectParams())); err != nil {
			return nil, fmt.Errorf("dial %s: %w", addr, err)
		}
	}
	return &grpcAdmin{conn: conn, c: rolisv1.NewAdminClient(conn)}, nil
}

// tlsFallbackWait bounds how long a Dial during a move to TLS waits for the
// TLS connection before it falls back to plaintext (a plaintext-only
// member fails the handshake at once; the wait is for a slow one).
const tlsFallbackWait = 2 * time.Second

// connectsWithin says whether conn becomes READY within d (or ctx), and
// false as soon as it fails.
func connectsWithin(ctx context.Context, conn *grpc.ClientConn, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	conn.Connect()
	for {
		st := conn.GetState()
		switch st {
		case connectivity.Ready:
			return true
		case connectivity.TransientFailure, connectivity.Shutdown:
			return false
		}
		if !conn.WaitForStateChange(ctx, st) {
			return false
		}
	}
}

type grpcAdmin struct {
	conn *grpc.ClientConn
	c    rolisv1.AdminClient
}

func (g *grpcAdmin) Status(ctx context.Context) (*rolisv1.StatusResponse, error) {
	return g.c.Status(ctx, &rolisv1.StatusRequest{}, grpc.WaitForReady(false))
}

func (g *grpcAdmin) PrepareFailover(ctx context.Context, req *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
	return g.c.PrepareFailover(ctx, req)
}

func (g *grpcAdmin) OpenEpoch(ctx context.Context, req *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
	return g.c.OpenEpoch(ctx, req)
}

func (g *grpcAdmin) AnnounceLeader(ctx context.Context, req *rolisv1.AnnounceLeaderRequest) error {
	_, err := g.c.AnnounceLeader(ctx, req)
	return err
}

func (g *grpcAdmin) ChangeMembership(ctx context.Context, req *rolisv1.ChangeMembershipRequest) (*rolisv1.ChangeMembershipResponse, error) {
	return g.c.ChangeMembership(ctx, req)
}

func (g *grpcAdmin) Close() error { return g.conn.Close() }

// Timeouts of admin calls.
type Timeouts struct {
	// Probe bounds one Status call.
	Probe time.Duration
	// Prepare bounds PrepareFailover, which waits for a majority's promises.
	Prepare time.Duration
	// Open bounds OpenEpoch, which waits until re-proposals and barriers are
	// on a majority.
	Open time.Duration
	// Call bounds the other calls.
	Call time.Duration
}

// DefaultTimeouts suit a cluster on one network.
func DefaultTimeouts() Timeouts {
	return Timeouts{Probe: time.Second, Prepare: 10 * time.Second, Open: 10 * time.Second, Call: 3 * time.Second}
}

// connectParams reconnect quickly: gRPC's default backoff (1 s, growing
// to 2 minutes) would leave the leader's heartbeat connection failing for
// seconds after the member is back. A member is one address, so at most
// one connection attempt per second per connection is cheap.
func connectParams() grpc.ConnectParams {
	return grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
		MinConnectTimeout: time.Second,
	}
}
