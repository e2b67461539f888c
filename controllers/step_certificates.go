/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"time"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rolisdb/rolis/controllers/specs"
)

// Condition types of single concerns, beside the five of the cluster.
const (
	ConditionCertificatesReady = "CertificatesReady"
	ConditionMonitoringReady   = "MonitoringReady"
)

// Reasons of conditions and events.
const (
	ReasonCertManagerMissing       = "CertManagerMissing"
	ReasonCertificatesIssuing      = "CertificatesIssuing"
	ReasonCertificatesIssued       = "CertificatesIssued"
	ReasonServiceMonitorCRDMissing = "ServiceMonitorCRDMissing"
	ReasonServiceMonitorCreated    = "ServiceMonitorReady"
	ReasonMonitoringDisabled       = "MonitoringDisabled"
	retryMissingDependency         = time.Minute
)

// crdInstalled asks the REST mapper (which rediscovers a group it does not
// know) whether the API server serves a kind.
func (r *Reconciler) crdInstalled(gk schema.GroupKind, version string) (bool, error) {
	_, err := r.RESTMapper().RESTMapping(gk, version)
	if err == nil {
		return true, nil
	}
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return false, err
}

// reconcileCertificates asks cert-manager for the member and client
// certificates when TLS is on. Without cert-manager the pods could never
// mount their certificates, so the reconcile stops here with a condition and
// comes back in a minute rather than creating pods that cannot start.
func (r *Reconciler) reconcileCertificates(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if !c.TLSEnabled() {
		return proceed, nil
	}
	ok, err := r.crdInstalled(schema.GroupKind{Group: cmv1.SchemeGroupVersion.Group, Kind: "Certificate"}, cmv1.SchemeGroupVersion.Version)
	if err != nil {
		return proceed, err
	}
	if !ok {
		msg := fmt.Sprintf("spec.tls is set but cert-manager is not installed (no %s/Certificate API): install cert-manager, the cluster waits for it",
			cmv1.SchemeGroupVersion.String())
		s.condition(ConditionCertificatesReady, false, ReasonCertManagerMissing, msg)
		s.problem(ReasonCertManagerMissing, msg)
		return stopFor(retryMissingDependency), nil
	}

	issued := true
	for _, desired := range []*cmv1.Certificate{specs.ServerCertificate(c, r.Options), specs.ClientCertificate(c)} {
		cert := &cmv1.Certificate{}
		if _, err := r.apply(ctx, cert, desired, func() { cert.Spec = desired.Spec }); err != nil {
			return proceed, err
		}
		if !certReady(cert) {
			issued = false
			continue
		}
		if err := r.ownSecret(ctx, s, desired.Spec.SecretName); err != nil {
			return proceed, err
		}
	}
	if issued {
		s.condition(ConditionCertificatesReady, true, ReasonCertificatesIssued, "member and client certificates are issued")
	} else {
		s.condition(ConditionCertificatesReady, false, ReasonCertificatesIssuing,
			fmt.Sprintf("waiting for issuer %s/%s to issue the certificates", c.Spec.TLS.IssuerRef.Kind, c.Spec.TLS.IssuerRef.Name))
		s.progressing(ReasonCertificatesIssuing, "waiting for cert-manager to issue the certificates")
	}
	return proceed, nil
}

// ownSecret makes the cluster an owner of a Secret that cert-manager wrote,
// so that deleting the cluster deletes it too: cert-manager leaves the
// Secret of a deleted Certificate in place (unless it runs with
// --enable-certificate-owner-ref), which the e2e removal scenario found.
// The Secret is read around the cache, which holds no Secrets.
func (r *Reconciler) ownSecret(ctx context.Context, s *state, name string) error {
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: s.cluster.Namespace, Name: name}, sec); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, ref := range sec.OwnerReferences {
		if ref.UID == s.cluster.UID {
			return nil
		}
	}
	patch := client.MergeFromWithOptions(sec.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if err := controllerutil.SetOwnerReference(s.cluster, sec, r.Scheme); err != nil {
		return err
	}
	return client.IgnoreNotFound(r.Patch(ctx, sec, patch))
}

func certReady(cert *cmv1.Certificate) bool {
	for _, cond := range cert.Status.Conditions {
		if cond.Type == cmv1.CertificateConditionReady {
			return cond.Status == cmmeta.ConditionTrue
		}
	}
	return false
}
