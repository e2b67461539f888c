/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package v1alpha1

import (
	"fmt"
	"time"
)

// The range and the format of spec.batchTimeout, one definition for the
// CRD, the operator and rolisd (docs/operator.md, "Batch timeout"):
//
//   - the API server admits any spelling of Go's time.ParseDuration
//     within MinBatchTimeout..MaxBatchTimeout (the marker on the spec says
//     the same bounds);
//   - the operator hands rolisd the value rounded to the microsecond, as a
//     whole number of the largest unit that divides it: "1s", "2ms",
//     "1500us" (BatchTimeoutFlag);
//   - rolisd (engine/src/server/config.h, kMinBatchTimeout and
//     ParseBatchTimeout) takes the same bounds and every spelling the API
//     server admits.
//
// testdata/batch-timeouts.txt lists the boundary cases; the Go tests, the
// envtest spec (controllers) and rolisd's config tests all check them.
const (
	MinBatchTimeout = 50 * time.Microsecond
	MaxBatchTimeout = time.Second
)

// ValidBatchTimeout reports whether d is in the range the API server admits.
func ValidBatchTimeout(d time.Duration) bool {
	return d >= MinBatchTimeout && d <= MaxBatchTimeout
}

// BatchTimeoutFlag is d as the operator writes it for rolisd's
// --batch-timeout (ROLISD_BATCH_TIMEOUT): rounded to the microsecond, in
// whole seconds, milliseconds or microseconds. The values that were whole
// milliseconds or seconds read as Duration.String() wrote them, so an
// upgrade of the operator does not roll the pods of a cluster that ran.
func BatchTimeoutFlag(d time.Duration) string {
	d = d.Round(time.Microsecond)
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dus", d/time.Microsecond)
}
