/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
	"github.com/rolisdb/rolis/internal/testca"
)

type tlsAdmin struct {
	rolisv1.UnimplementedAdminServer
}

func (tlsAdmin) Status(context.Context, *rolisv1.StatusRequest) (*rolisv1.StatusResponse, error) {
	return &rolisv1.StatusResponse{Id: 1, Role: rolisv1.Role_FOLLOWER, Healthy: true}, nil
}

func TestTheOperatorReachesATLSMemberWithItsOperatorCertificate(t *testing.T) {
	g := NewWithT(t)
	ca := testca.New(t, "operator")
	db := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: dbv1.RolisClusterSpec{TLS: &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}}}

	// A member with the server certificate's names, requiring client certificates (mTLS).
	srvCert, srvKey := ca.IssuePEM(t, testca.Spec{Name: "member", DNSNames: specs.ServerCertificate(db, specs.DefaultOptions()).Spec.DNSNames,
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	g.Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})))
	rolisv1.RegisterAdminServer(srv, tlsAdmin{})
	go srv.Serve(lis) //nolint:errcheck
	defer srv.Stop()

	opCert, opKey := ca.IssuePEM(t, testca.Spec{Name: "db-operator", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: specs.OperatorSecretName(db), Namespace: "ns"},
		Data: map[string][]byte{corev1.TLSCertKey: opCert, corev1.TLSPrivateKeyKey: opKey, "ca.crt": ca.PEM}}
	reader := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(secret).Build()

	d := leadership.GRPCDialer{
		Resolver: leadership.ResolverFunc(func(leadership.Target) (string, error) { return lis.Addr().String(), nil }),
		TLS:      OperatorTLS(reader, specs.DefaultOptions()),
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1"}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, leadership.Target{Cluster: db, ID: 1, Pod: pod})
	g.Expect(err).NotTo(HaveOccurred())
	defer c.Close() //nolint:errcheck
	st, err := c.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.GetRole()).To(Equal(rolisv1.Role_FOLLOWER))

	// A cluster made by an older operator has only the client Secret until
	// cert-manager issues the operator's: the operator uses the client's.
	legacy := secret.DeepCopy()
	legacy.Name = specs.ClientSecretName(db)
	d.TLS = OperatorTLS(fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(legacy).Build(), specs.DefaultOptions())
	c2, err := d.Dial(ctx, leadership.Target{Cluster: db, ID: 1, Pod: pod})
	g.Expect(err).NotTo(HaveOccurred())
	defer c2.Close() //nolint:errcheck
	_, err = c2.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())

	// Without either Secret the dial fails and says which Secret.
	empty := fake.NewClientBuilder().WithScheme(NewScheme()).Build()
	d.TLS = OperatorTLS(empty, specs.DefaultOptions())
	_, err = d.Dial(ctx, leadership.Target{Cluster: db, ID: 1, Pod: pod})
	g.Expect(err).To(MatchError(ContainSubstring("ns/db-operator-tls")))

	// A Secret without a usable CA is refused rather than trusted blindly.
	secret.Data["ca.crt"] = []byte("not a certificate")
	_, err = tlsConfig(secret, "x")
	g.Expect(err).To(MatchError(ContainSubstring("no usable ca.crt")))
	secret.Data[corev1.TLSPrivateKeyKey] = []byte("garbage")
	_, err = tlsConfig(secret, "x")
	g.Expect(err).To(HaveOccurred())
}

func TestPodIPResolver(t *testing.T) {
	g := NewWithT(t)
	r := leadership.PodIPResolver{Port: specs.AdminPort}
	_, err := r.AdminAddress(leadership.Target{ID: 2})
	g.Expect(err).To(MatchError(ContainSubstring("pod of member 2 does not exist")))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-2"}}
	_, err = r.AdminAddress(leadership.Target{ID: 2, Pod: p})
	g.Expect(err).To(MatchError(ContainSubstring("has no IP yet")))
	p.Status.PodIP = "fd00::5"
	a, err := r.AdminAddress(leadership.Target{ID: 2, Pod: p})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal("[fd00::5]:7001"))
}
