/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// ConditionTLSDisabled is True while the members speak plaintext; the
// reason says why (docs/operations.md, "Kubernetes security").
const ConditionTLSDisabled = "TLSDisabled"

// Reasons of the TLS mode.
const (
	// ReasonTLSDisabledBySpec: spec.tls.enabled is false.
	ReasonTLSDisabledBySpec = "DisabledBySpec"
	// ReasonTLSNoCertManager: TLS was left to the default and cert-manager
	// was not installed when the members were first made.
	ReasonTLSNoCertManager = "CertManagerNotInstalled"
	// ReasonTLSCreatedWithout: the members ran in plaintext before the
	// operator recorded a mode (a cluster made by an older operator).
	ReasonTLSCreatedWithout = "CreatedWithoutTLS"
	// ReasonTLSChangeRefused: the spec asks for another mode than the
	// members run; the operator keeps theirs.
	ReasonTLSChangeRefused = "TLSChangeNotSupported"
	// ReasonTLSModeChosen is the event of the recorded mode.
	ReasonTLSModeChosen = "TLSModeChosen"
	// The phases of a running cluster's move to TLS (Progressing reasons
	// and events; docs/operations.md, "Turning TLS on or off for a running
	// cluster").
	ReasonTLSTransitionIssuing         = "TLSTransitionIssuingCertificates"
	ReasonTLSTransitionAcceptPlaintext = "TLSTransitionAcceptPlaintext"
	ReasonTLSTransitionRequireTLS      = "TLSTransitionRequireTLS"
)

func tlsMode(on bool) string {
	if on {
		return dbv1.TLSModeMutual
	}
	return dbv1.TLSModePlaintext
}

// runningTLSMode is the mode the StatefulSet's members run, from their
// flags: plaintext, mutual, or dbv1.TLSModeToMutualAcceptPlaintext (TLS
// with --tls-accept-plaintext).
func runningTLSMode(sts *appsv1.StatefulSet) string {
	for _, ctr := range sts.Spec.Template.Spec.Containers {
		if ctr.Name == specs.ContainerRun {
			if slices.Contains(ctr.Args, specs.FlagTLSAcceptPlaintext) {
				return dbv1.TLSModeToMutualAcceptPlaintext
			}
			return tlsMode(slices.ContainsFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--tls-ca=") }))
		}
	}
	return ""
}

func (r *Reconciler) certManagerInstalled() (bool, error) {
	return r.crdInstalled(schema.GroupKind{Group: cmv1.SchemeGroupVersion.Group, Kind: "Certificate"}, cmv1.SchemeGroupVersion.Version)
}

// resolveTLSMode decides whether the members speak mutual TLS and records
// it on the cluster (dbv1.AnnotationTLSMode), which every later step and
// the admin dialer read through c.TLSEnabled():
//   - a move to TLS under way (dbv1.TLSModeToMutual*) goes on: the "tls
//     transition" step (step_tls_transition.go) moves it to its next phase;
//   - members that run plaintext while the spec asks for TLS explicitly
//     (spec.tls.enabled: true or an issuerRef) start that move: the
//     certificates are issued first (s.tlsIssueFirst), and once they are
//     Ready the certificates step records the first phase;
//   - members that run mutual TLS keep it: turning TLS off on a running
//     cluster is refused with a Degraded condition, and nothing changes
//     (docs/operations.md, "Turning TLS on or off for a running cluster");
//   - otherwise spec.tls.enabled decides, and when the spec leaves it to
//     the default, TLS is on where cert-manager is installed; without
//     cert-manager the cluster comes up in plaintext and says so.
func (r *Reconciler) resolveTLSMode(ctx context.Context, s *state) (outcome, error) {
	c := s.cluster
	recorded, recordedWhy := c.Annotations[dbv1.AnnotationTLSMode], c.Annotations[dbv1.AnnotationTLSModeReason]
	// The first decision reads the StatefulSet around the cache: a cache
	// that has not seen members yet must not make them switch.
	var reader client.Reader = r.Client
	if recorded == "" {
		reader = r.APIReader
	}
	running := ""
	sts := &appsv1.StatefulSet{}
	switch err := reader.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: specs.StatefulSetName(c)}, sts); {
	case err == nil:
		running = runningTLSMode(sts)
	case !apierrors.IsNotFound(err):
		return proceed, err
	}

	want, why := recorded, recordedWhy
	switch {
	case c.TLSTransition() || running == dbv1.TLSModeToMutualAcceptPlaintext:
		if !c.TLSTransition() {
			want = dbv1.TLSModeToMutualAcceptPlaintext // the record was lost: the members say where they are
		}
		if !c.TLSRequested() {
			s.problem(ReasonTLSChangeRefused, "spec.tls.enabled is false but the members are moving to mutual TLS: "+
				"the move completes (turning TLS off on a running cluster is not supported: create a new cluster)")
		}
	case running != "":
		if running != recorded {
			why = ""
			if running == dbv1.TLSModePlaintext {
				why = ReasonTLSCreatedWithout
			}
		}
		want = running
		switch {
		case running == dbv1.TLSModePlaintext && c.TLSExplicit() && c.TLSRequested():
			// Only on the user's word: a cluster left to the default (made
			// without cert-manager, or by an older operator) is not rolled
			// twice because cert-manager was installed meanwhile.
			installed, err := r.certManagerInstalled()
			if err != nil {
				return proceed, err
			}
			if installed {
				s.tlsIssueFirst = true
				s.progressing(ReasonTLSTransitionIssuing, "spec.tls asks for mutual TLS on running plaintext members: "+
					"the certificates are issued first, then the members roll to take TLS and plaintext, then to require TLS")
			} else {
				s.problem(ReasonTLSChangeRefused, fmt.Sprintf("spec.tls asks for mutual TLS but cert-manager is not installed "+
					"(no %s/Certificate API): the members keep plaintext until it is", cmv1.SchemeGroupVersion.String()))
			}
		case running == dbv1.TLSModeMutual && !c.TLSRequested():
			s.problem(ReasonTLSChangeRefused, "spec.tls.enabled is false but the members run mutual TLS: turning TLS off "+
				"on a running cluster is not supported (create a new cluster); the members keep mutual TLS")
		}
	case !c.TLSRequested():
		want, why = dbv1.TLSModePlaintext, ReasonTLSDisabledBySpec
	case c.TLSExplicit():
		want, why = dbv1.TLSModeMutual, ""
	default:
		installed, err := r.certManagerInstalled()
		if err != nil {
			return proceed, err
		}
		want, why = tlsMode(installed), ""
		if !installed {
			why = ReasonTLSNoCertManager
		}
	}
	if want != dbv1.TLSModePlaintext {
		why = ""
	} else if !c.TLSRequested() {
		why = ReasonTLSDisabledBySpec // the spec's own word, whatever came first
	} else if why == "" {
		why = ReasonTLSNoCertManager
	} else if why == ReasonTLSDisabledBySpec {
		why = ReasonTLSCreatedWithout // enabled: false removed; the members stay plaintext until enabled: true
	}

	if want != recorded || why != recordedWhy {
		if err := r.recordTLSMode(ctx, s, want, why); err != nil {
			if apierrors.IsNotFound(err) {
				return stopFor(0), nil // deleted under the reconcile
			}
			return proceed, err
		}
		if want != recorded {
			kind := corev1.EventTypeNormal
			if want == dbv1.TLSModePlaintext {
				kind = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(c, nil, kind, ReasonTLSModeChosen, "ResolveTLS", "members speak %s: %s", want, tlsModeMessage(c, want, why))
		}
	}

	if want == dbv1.TLSModePlaintext {
		s.condition(ConditionTLSDisabled, true, why, tlsModeMessage(c, want, why))
	}
	return proceed, nil
}

// recordTLSMode patches the cluster's TLS mode annotations (why "": none).
func (r *Reconciler) recordTLSMode(ctx context.Context, s *state, mode, why string) error {
	c := s.cluster
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[dbv1.AnnotationTLSMode] = mode
	if why == "" {
		delete(c.Annotations, dbv1.AnnotationTLSModeReason)
	} else {
		c.Annotations[dbv1.AnnotationTLSModeReason] = why
	}
	if err := r.Patch(ctx, c, patch); err != nil {
		return err
	}
	s.original.Annotations = c.DeepCopy().Annotations
	s.original.ResourceVersion = c.ResourceVersion
	return nil
}

func tlsModeMessage(c *dbv1.RolisCluster, mode, why string) string {
	switch mode {
	case dbv1.TLSModeMutual:
		return "mutual TLS on every port, certificates from " + specs.IssuerDescription(c)
	case dbv1.TLSModeToMutualAcceptPlaintext:
		return "moving to mutual TLS: the members roll to take both TLS and plaintext (--tls-accept-plaintext), " +
			"certificates from " + specs.IssuerDescription(c)
	case dbv1.TLSModeToMutualRequireTLS:
		return "moving to mutual TLS: every member takes TLS; the members roll again to require it"
	}
	switch why {
	case ReasonTLSNoCertManager:
		return "the members speak plaintext: TLS is on by default but cert-manager was not installed when they were made; " +
			"anyone who reaches the pods can read and write the database; once cert-manager is installed, set spec.tls.enabled: true " +
			"to move the running members to mutual TLS (a rolling change: docs/operations.md, \"Turning TLS on or off for a running cluster\")"
	case ReasonTLSCreatedWithout:
		return "the members speak plaintext: the cluster was made without TLS; anyone who reaches the pods can read and write the database; " +
			"set spec.tls.enabled: true to move them to mutual TLS (a rolling change: docs/operations.md, \"Turning TLS on or off for a running cluster\")"
	}
	return "the members speak plaintext (spec.tls.enabled is false): anyone who reaches the pods can read and write the database"
}
