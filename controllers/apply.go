/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// apply creates obj from desired, or brings the fields the operator owns
// (mutate) back to desired. It reads through the cache: if the cache is
// stale, Create fails with AlreadyExists or Update with a Conflict, and the
// reconcile is retried (isTransient), never acted on twice.
func (r *Reconciler) apply(ctx context.Context, obj, desired client.Object, mutate func()) (controllerutil.OperationResult, error) {
	obj.SetName(desired.GetName())
	obj.SetNamespace(desired.GetNamespace())
	return controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range desired.GetLabels() {
			labels[k] = v
		}
		obj.SetLabels(labels)
		obj.SetOwnerReferences(desired.GetOwnerReferences())
		mutate()
		return nil
	})
}

// createOnce creates obj if it does not exist and never changes it after:
// for objects whose content belongs to someone else once made (the epoch
// record, the promotion Lease).
func (r *Reconciler) createOnce(ctx context.Context, obj client.Object) error {
	existing := obj.DeepCopyObject().(client.Object)
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	if err == nil {
		return nil
	}
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	return r.Create(ctx, obj)
}
