/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import "time"

// Defaults the API server fills in (see the markers on the spec). The
// accessors below return them when a field is empty, so code that runs on an
// object that was never defaulted (unit tests, old objects) behaves the same.
const (
	DefaultReplicas           = 3
	DefaultWorkerThreads      = 2
	DefaultReplicationStreams = DefaultWorkerThreads
	DefaultBatchSize          = 200 // rolisd's --batch-size default (engine/src/server/config.h)
	DefaultBatchTimeout       = time.Millisecond
	DefaultFailoverTimeout    = 3 * time.Second
	DefaultScrapeInterval     = "30s"
	DefaultStorageSize        = "1Gi"
)

// DesiredReplicas returns spec.replicas or its default.
func (c *RolisCluster) DesiredReplicas() int32 {
	if c.Spec.Replicas > 0 {
		return c.Spec.Replicas
	}
	return DefaultReplicas
}

// WorkerThreads returns spec.workerThreads or its default.
func (c *RolisCluster) WorkerThreads() int32 {
	if c.Spec.WorkerThreads > 0 {
		return c.Spec.WorkerThreads
	}
	return DefaultWorkerThreads
}

// ReplicationStreams returns spec.replicationStreams or its default (never
// below WorkerThreads, which rolisd would refuse).
func (c *RolisCluster) ReplicationStreams() int32 {
	s := c.Spec.ReplicationStreams
	if s <= 0 {
		s = DefaultReplicationStreams
	}
	return max(s, c.WorkerThreads())
}

// BatchSize returns spec.batchSize or its default.
func (c *RolisCluster) BatchSize() int32 {
	if c.Spec.BatchSize > 0 {
		return c.Spec.BatchSize
	}
	return DefaultBatchSize
}

// BatchTimeout returns spec.batchTimeout or its default.
func (c *RolisCluster) BatchTimeout() time.Duration {
	if c.Spec.BatchTimeout != nil && c.Spec.BatchTimeout.Duration > 0 {
		return c.Spec.BatchTimeout.Duration
	}
	return DefaultBatchTimeout
}

// FailoverTimeout returns spec.failover.timeout or its default.
func (c *RolisCluster) FailoverTimeout() time.Duration {
	if c.Spec.Failover.Timeout != nil && c.Spec.Failover.Timeout.Duration > 0 {
		return c.Spec.Failover.Timeout.Duration
	}
	return DefaultFailoverTimeout
}

// ScrapeInterval returns spec.monitoring.interval or its default.
func (c *RolisCluster) ScrapeInterval() string {
	if c.Spec.Monitoring.Interval != "" {
		return c.Spec.Monitoring.Interval
	}
	return DefaultScrapeInterval
}

// AnnotationTLSMode records the TLS mode the operator chose for a cluster
// (TLSModeMutual or TLSModePlaintext) when it first made its members: the
// spec's default depends on whether cert-manager is installed, and members
// of one cluster must all speak the same (docs/operations.md, "Kubernetes
// security").
const AnnotationTLSMode = "db.rolis.io/tls-mode"

// AnnotationTLSModeReason says why a cluster's members speak plaintext
// (the reason of its TLSDisabled condition), recorded with AnnotationTLSMode.
const AnnotationTLSModeReason = "db.rolis.io/tls-mode-reason"

// TLS modes of AnnotationTLSMode.
const (
	TLSModeMutual    = "mutual"
	TLSModePlaintext = "plaintext"
	// The two rollouts that move a running plaintext cluster to mutual TLS
	// (docs/operations.md, "Turning TLS on or off for a running cluster"):
	// first the members take both TLS and plaintext
	// (--tls-accept-plaintext), then, once every member runs that, they
	// require TLS. The operator records TLSModeMutual when the second
	// rollout is done.
	TLSModeToMutualAcceptPlaintext = "to-mutual-accept-plaintext"
	TLSModeToMutualRequireTLS      = "to-mutual-require-tls"
)

// TLSRequested reports what the spec asks for: TLS unless spec.tls.enabled
// is false.
func (c *RolisCluster) TLSRequested() bool {
	return c.Spec.TLS == nil || c.Spec.TLS.Enabled == nil || *c.Spec.TLS.Enabled
}

// TLSExplicit reports whether the spec names TLS explicitly (enabled set or
// an issuer given) rather than leaving it to the default.
func (c *RolisCluster) TLSExplicit() bool {
	return c.Spec.TLS != nil && (c.Spec.TLS.Enabled != nil || c.Spec.TLS.IssuerRef != nil)
}

// TLSEnabled reports whether the members use TLS: the mode the operator
// recorded (AnnotationTLSMode), else what the spec asks for.
func (c *RolisCluster) TLSEnabled() bool {
	switch c.Annotations[AnnotationTLSMode] {
	case TLSModeMutual, TLSModeToMutualAcceptPlaintext, TLSModeToMutualRequireTLS:
		return true
	case TLSModePlaintext:
		return false
	}
	return c.TLSRequested()
}

// TLSAcceptPlaintext reports whether the members also take plaintext
// (rolisd --tls-accept-plaintext): the first rollout of a move to TLS.
func (c *RolisCluster) TLSAcceptPlaintext() bool {
	return c.Annotations[AnnotationTLSMode] == TLSModeToMutualAcceptPlaintext
}

// TLSTransition reports whether the members are moving to TLS: some may
// still speak plaintext only, so the operator dials TLS first and falls
// back to plaintext.
func (c *RolisCluster) TLSTransition() bool {
	switch c.Annotations[AnnotationTLSMode] {
	case TLSModeToMutualAcceptPlaintext, TLSModeToMutualRequireTLS:
		return true
	}
	return false
}

// DefaultIssuer reports whether the operator makes the cluster's CA (no
// spec.tls.issuerRef).
func (c *RolisCluster) DefaultIssuer() bool { return c.Spec.TLS == nil || c.Spec.TLS.IssuerRef == nil }

// NetworkPolicyEnabled returns spec.networkPolicy.enabled or its default, true.
func (c *RolisCluster) NetworkPolicyEnabled() bool {
	return c.Spec.NetworkPolicy.Enabled == nil || *c.Spec.NetworkPolicy.Enabled
}

// PrefaultMemoryBytes returns spec.prefaultMemory in bytes (0: none).
func (c *RolisCluster) PrefaultMemoryBytes() int64 {
	if c.Spec.PrefaultMemory == nil {
		return 0
	}
	return c.Spec.PrefaultMemory.Value()
}

// DefaultLogFormat is the log format of rolisd in the pods (rolisd's own
// default is text).
const DefaultLogFormat = "json"

// LogFormat returns spec.logFormat or its default.
func (c *RolisCluster) LogFormat() string {
	if c.Spec.LogFormat != "" {
		return c.Spec.LogFormat
	}
	return DefaultLogFormat
}

// DefaultDurability is the durability of a cluster without spec.durability.
const DefaultDurability = DurabilityDisk

// DurabilityMode returns spec.durability or its default.
func (c *RolisCluster) DurabilityMode() Durability {
	if c.Spec.Durability != "" {
		return c.Spec.Durability
	}
	return DefaultDurability
}
