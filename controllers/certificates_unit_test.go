/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// cert-manager leaves the Secret of a deleted Certificate in place: the
// cluster owns it, once, beside whoever owned it already.
func TestTheClusterOwnsTheSecretsOfItsCertificates(t *testing.T) {
	g := NewWithT(t)
	other := metav1.OwnerReference{APIVersion: "cert-manager.io/v1", Kind: "Certificate", Name: "db-server", UID: "cert-uid"}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-server-tls", Namespace: "ns",
		OwnerReferences: []metav1.OwnerReference{other}}}
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{}, sec)
	s := newState(e.db, &memory{})
	ctx := context.Background()
	for range 2 { // the second pass changes nothing
		g.Expect(e.r.ownSecret(ctx, s, "db-server-tls")).To(Succeed())
	}
	got := &corev1.Secret{}
	g.Expect(e.c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "db-server-tls"}, got)).To(Succeed())
	g.Expect(got.OwnerReferences).To(HaveLen(2))
	g.Expect(got.OwnerReferences[0]).To(Equal(other))
	g.Expect(got.OwnerReferences[1].UID).To(Equal(e.db.UID))
	g.Expect(got.OwnerReferences[1].Kind).To(Equal("RolisCluster"))
	g.Expect(got.OwnerReferences[1].Controller).To(BeNil(), "not the controller: cert-manager may be")

	// Not issued yet: nothing to own, no error.
	g.Expect(e.r.ownSecret(ctx, s, "db-client-tls")).To(Succeed())
}
