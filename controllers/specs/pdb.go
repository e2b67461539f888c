/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// PodDisruptionBudget lets voluntary disruptions (node drains) take one
// member at a time: a majority stays up, and a failover or catch-up finishes
// before the next member goes. With one replica it cannot protect anything
// and does not block drains. Unhealthy pods may always be evicted, so a
// crash-looping member never blocks a drain.
func PodDisruptionBudget(c *dbv1.RolisCluster) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(c, PDBName(c)),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable:             ptr.To(intstr.FromInt32(1)),
			Selector:                   &metav1.LabelSelector{MatchLabels: SelectorLabels(c)},
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
