/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	"github.com/rolisdb/rolis/controllers/specs"
)

// checkSpec stops the reconcile, changing nothing, on a combination of
// fields that the CRD's schema cannot check within CEL's cost budget (a
// comparison with a value of the resources map). It reports the problem as
// Degraded/InvalidSpec; the next edit of the cluster reconciles again.
func (r *Reconciler) checkSpec(_ context.Context, s *state) (outcome, error) {
	if msg := specs.InvalidSpec(s.cluster); msg != "" {
		s.problem("InvalidSpec", msg)
		return outcome{stop: true}, nil
	}
	return proceed, nil
}
