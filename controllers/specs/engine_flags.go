/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// FlagTLSTrustDomain makes rolisd refuse a certificate whose URI SAN has
// another trust domain than the cluster's (docs/operations.md, "Certificate
// identities"); given with the TLS flags.
const FlagTLSTrustDomain = "--tls-trust-domain"

// FlagTLSAcceptPlaintext makes rolisd take plaintext connections beside
// TLS on every port: the first rollout of a running cluster's move to TLS
// (docs/operations.md, "Turning TLS on or off for a running cluster").
const FlagTLSAcceptPlaintext = "--tls-accept-plaintext"

// MetricsScheme is the scheme of the metrics port: HTTPS when the members
// use TLS.
func MetricsScheme(c *dbv1.RolisCluster) corev1.URIScheme {
	if c.TLSEnabled() {
		return corev1.URISchemeHTTPS
	}
	return corev1.URISchemeHTTP
}

// optionalEngineFlags are the rolisd flags of spec fields that are unset
// by default; an unset field adds no flag, so the pod template of a
// cluster that does not use them stays as it was before they existed.
//   - tables: --tables in the spec's order (rolisd numbers tables by their
//     position and always creates "kv" first);
//   - logLevel: --log-level.
func optionalEngineFlags(c *dbv1.RolisCluster) []string {
	var args []string
	if len(c.Spec.Tables) > 0 {
		names := make([]string, len(c.Spec.Tables))
		for i, t := range c.Spec.Tables {
			names[i] = string(t)
		}
		args = append(args, "--tables="+strings.Join(names, ","))
	}
	if c.Spec.LogLevel != "" {
		args = append(args, "--log-level="+c.Spec.LogLevel)
	}
	return args
}
