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

// reconcileCertificates asks cert-manager for the certificates of the
// cluster's identities when TLS is on (docs/operations.md, "Certificate
// identities"): member, operator, client and, with spec.tls.readOnlyClient,
// client-readonly; without spec.tls.issuerRef, from the cluster's own CA
// (a self-signed Issuer signs a CA Certificate, a CA Issuer issues from
// it). Without cert-manager the pods could never mount their certificates,
// so the reconcile stops here with a condition and comes back in a minute
// rather than creating pods that cannot start.
func (r *Reconciler) reconcileCertificates(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	if !c.TLSEnabled() && !s.tlsIssueFirst {
		return proceed, nil
	}
	ok, err := r.certManagerInstalled()
	if err != nil {
		return proceed, err
	}
	if !ok {
		msg := fmt.Sprintf("the members use TLS but cert-manager is not installed (no %s/Certificate API): install cert-manager, the cluster waits for it",
			cmv1.SchemeGroupVersion.String())
		s.condition(ConditionCertificatesReady, false, ReasonCertManagerMissing, msg)
		s.problem(ReasonCertManagerMissing, msg)
		return stopFor(retryMissingDependency), nil
	}

	if c.DefaultIssuer() {
		if err := r.reconcileDefaultCA(ctx, s); err != nil {
			return proceed, err
		}
	}
	issued := true
	for _, desired := range specs.Certificates(c, r.Options) {
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
	if c.Spec.TLS == nil || !c.Spec.TLS.ReadOnlyClient {
		if err := r.deleteOwnedCertificate(ctx, s, specs.ReadOnlyClientCertificateName(c)); err != nil {
			return proceed, err
		}
	}
	if issued {
		s.condition(ConditionCertificatesReady, true, ReasonCertificatesIssued, "member, operator and client certificates are issued by "+specs.IssuerDescription(c))
		if s.tlsIssueFirst {
			return r.beginTLSTransition(ctx, s)
		}
	} else {
		s.condition(ConditionCertificatesReady, false, ReasonCertificatesIssuing,
			fmt.Sprintf("waiting for issuer %s to issue the certificates", specs.IssuerDescription(c)))
		s.progressing(ReasonCertificatesIssuing, "waiting for cert-manager to issue the certificates")
	}
	return proceed, nil
}

// reconcileDefaultCA makes the cluster's own CA chain. The CA Secret is
// owned by the cluster like the others, so deleting the cluster deletes its
// CA too.
func (r *Reconciler) reconcileDefaultCA(ctx context.Context, s *state) error {
	c := s.cluster
	for _, desired := range []*cmv1.Issuer{specs.SelfSignedIssuer(c), specs.CAIssuer(c)} {
		iss := &cmv1.Issuer{}
		if _, err := r.apply(ctx, iss, desired, func() { iss.Spec = desired.Spec }); err != nil {
			return err
		}
	}
	desired := specs.CACertificate(c)
	ca := &cmv1.Certificate{}
	if _, err := r.apply(ctx, ca, desired, func() { ca.Spec = desired.Spec }); err != nil {
		return err
	}
	if !certReady(ca) {
		return nil
	}
	return r.ownSecret(ctx, s, desired.Spec.SecretName)
}

// deleteOwnedCertificate removes a Certificate the cluster no longer asks
// for (the read-only client's, when spec.tls.readOnlyClient is turned off),
// if the cluster made it. Its Secret stays until the cluster is deleted (the
// operator may not delete Secrets); the certificate it holds stays valid
// until it expires: revoking it means a new CA.
func (r *Reconciler) deleteOwnedCertificate(ctx context.Context, s *state, name string) error {
	cert := &cmv1.Certificate{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: s.cluster.Namespace, Name: name}, cert); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !isOwnedBy(cert.OwnerReferences, s.cluster.UID) {
		return nil
	}
	return client.IgnoreNotFound(r.Delete(ctx, cert))
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
