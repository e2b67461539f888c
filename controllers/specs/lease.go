/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	coordinationv1 "k8s.io/api/coordination/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// FailoverLease is the empty Lease that serializes promotions of a cluster;
// the holder fields are written by compare-and-set when a promotion starts.
func FailoverLease(c *dbv1.RolisCluster) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: objectMeta(c, LeaseName(c))}
}
