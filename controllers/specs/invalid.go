/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// InvalidSpec says what is wrong with a combination of fields that the
// CRD's schema does not check, and what to do; "" when nothing is.
func InvalidSpec(c *dbv1.RolisCluster) string {
	if c.Spec.PrefaultMemory == nil {
		return ""
	}
	limit, ok := c.Spec.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		return ""
	}
	if c.Spec.PrefaultMemory.Cmp(limit) >= 0 {
		return fmt.Sprintf("spec.prefaultMemory (%s) must be less than resources.limits.memory (%s): the prefaulted "+
			"memory counts toward the limit from the start and rolisd needs room besides it; lower prefaultMemory "+
			"or raise the limit", c.Spec.PrefaultMemory.String(), limit.String())
	}
	// In float64: exact enough for a bound, and no overflow of the product.
	if watermark := limit.AsApproximateFloat64() * MemoryHighWatermarkPercent / 100; c.Spec.PrefaultMemory.AsApproximateFloat64() >= watermark {
		return fmt.Sprintf("spec.prefaultMemory (%s) must be below %d%% of resources.limits.memory (%s), the memory "+
			"watermark from which rolisd refuses writes that add data: the prefaulted memory is resident from the "+
			"start, so every such write would be refused; lower prefaultMemory or raise the limit "+
			"(docs/operations.md, \"Memory limit\")", c.Spec.PrefaultMemory.String(), MemoryHighWatermarkPercent, limit.String())
	}
	return ""
}

// MemoryHighWatermarkPercent is rolisd's --memory-high-watermark default
// (engine/src/server/config.h), which the operator does not change: the
// share of the memory limit from which writes that add data are refused.
const MemoryHighWatermarkPercent = 90
