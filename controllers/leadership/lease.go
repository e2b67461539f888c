/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrLeaseHeld means another holder runs a promotion of this cluster.
var ErrLeaseHeld = errors.New("promotion lease is held by another operator")

// PromotionLease serializes promotions of one cluster with a
// coordination.k8s.io Lease, taken and released by compare-and-set on its
// resourceVersion. The manager already runs with leader election, so one
// operator reconciles at a time; the Lease also covers the hand-over between
// two operator leaders and anything else that promotes (rolisctl), and it
// expires by itself if its holder dies mid-promotion.
type PromotionLease struct {
	Reader   client.Reader
	Writer   client.Writer
	Key      types.NamespacedName
	Holder   string
	Duration time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (l *PromotionLease) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Acquire takes the lease. The Lease object must exist (the controller
// creates it with the cluster). It returns ErrLeaseHeld when someone else
// holds an unexpired lease.
func (l *PromotionLease) Acquire(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	if err := l.Reader.Get(ctx, l.Key, lease); err != nil {
		return fmt.Errorf("read lease %s: %w", l.Key, err)
	}
	now := l.now()
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	if holder != "" && holder != l.Holder && !expired(lease, now) {
		return fmt.Errorf("%w: %s", ErrLeaseHeld, holder)
	}
	next := lease.DeepCopy()
	if holder != l.Holder {
		next.Spec.AcquireTime = &metav1.MicroTime{Time: now}
		next.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	}
	next.Spec.HolderIdentity = ptr.To(l.Holder)
	next.Spec.LeaseDurationSeconds = ptr.To(int32(l.Duration / time.Second))
	next.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if err := l.Writer.Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%w: the lease changed while taking it", ErrLeaseHeld)
		}
		return fmt.Errorf("take lease %s: %w", l.Key, err)
	}
	return nil
}

// Release gives the lease back if this holder still has it.
func (l *PromotionLease) Release(ctx context.Context) error {
	lease := &coordinationv1.Lease{}
	if err := l.Reader.Get(ctx, l.Key, lease); err != nil {
		return fmt.Errorf("read lease %s: %w", l.Key, err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != l.Holder {
		return nil
	}
	next := lease.DeepCopy()
	next.Spec.HolderIdentity = nil
	next.Spec.RenewTime = &metav1.MicroTime{Time: l.now()}
	if err := l.Writer.Update(ctx, next); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("release lease %s: %w", l.Key, err)
	}
	return nil
}

func expired(lease *coordinationv1.Lease, now time.Time) bool {
	if lease.Spec.RenewTime == nil || lease.Spec.LeaseDurationSeconds == nil {
		return true
	}
	end := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
	return now.After(end)
}
