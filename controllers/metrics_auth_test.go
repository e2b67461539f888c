/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The operator's /metrics as cmd/operator serves it (--metrics-secure):
// HTTPS, and only for a caller whose token may get /metrics.
var _ = Describe("Secure metrics", Ordered, func() {
	ctx := context.Background()
	var url string
	var cancel context.CancelFunc
	BeforeAll(func() {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		addr := lis.Addr().String()
		Expect(lis.Close()).To(Succeed())
		mgr, err := NewManager(cfg, ManagerOptions{MetricsAddr: addr, MetricsSecure: true, ProbeAddr: "0"})
		Expect(err).NotTo(HaveOccurred())
		var mctx context.Context
		mctx, cancel = context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
		DeferCleanup(func() { cancel(); Eventually(done).Should(BeClosed()) })
		url = "https://" + addr + "/metrics"
	})

	get := func(token string) int {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The certificate is self-signed (made at start).
		cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec
		resp, err := cl.Do(req)
		if err != nil {
			return -1
		}
		defer resp.Body.Close() //nolint:errcheck
		return resp.StatusCode
	}
	token := func(ns, sa string) string {
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(600)}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}

	It("refuses a caller without a token, and one whose token may not get /metrics", func() {
		Eventually(func() int { return get("") }).Should(Equal(http.StatusUnauthorized))
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: ns}})).To(Succeed())
		Expect(get(token(ns, "stranger"))).To(Equal(http.StatusForbidden))
	})

	It("serves a caller bound to the metrics-reader role", func() {
		ns := newNamespace(ctx)
		Expect(k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: ns}})).To(Succeed())
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
			Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
		Expect(k8s.Create(ctx, role)).To(Succeed())
		Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: ns}}})).To(Succeed())
		tok := token(ns, "prometheus")
		Eventually(func() int { return get(tok) }).Should(Equal(http.StatusOK), fmt.Sprintf("GET %s", url))
	})
})

func ptrInt64(v int64) *int64 { return &v }
