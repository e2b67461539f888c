/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
)

// OperatorTLS loads the operator's certificate for a cluster from the
// cluster's operator Secret (issued by cert-manager, identity "operator":
// docs/operations.md, "Certificate identities"): it authenticates the
// operator to the members' admin port and verifies them with the CA.
func OperatorTLS(reader client.Reader, o specs.Options) leadership.TLSSource {
	return func(ctx context.Context, c *dbv1.RolisCluster) (*tls.Config, error) {
		sec := &corev1.Secret{}
		key := types.NamespacedName{Namespace: c.Namespace, Name: specs.OperatorSecretName(c)}
		err := reader.Get(ctx, key, sec)
		if apierrors.IsNotFound(err) {
			// A cluster made by an older operator has no operator
			// certificate until cert-manager issues it; its members, which
			// do not check identities yet, accept the client certificate.
			legacy := types.NamespacedName{Namespace: c.Namespace, Name: specs.ClientSecretName(c)}
			if reader.Get(ctx, legacy, sec) == nil {
				err = nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("operator certificate secret %s: %w", key, err)
		}
		return tlsConfig(sec, specs.ServiceHost(c, specs.HeadlessServiceName(c), o))
	}
}

func tlsConfig(sec *corev1.Secret, serverName string) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", sec.Namespace, sec.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data["ca.crt"]) {
		return nil, errors.New("secret " + sec.Namespace + "/" + sec.Name + " has no usable ca.crt")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
		// Members are reached by pod IP; the certificate names the peer DNS
		// names, so verify against the wildcard of the headless Service.
		ServerName: "member." + serverName,
	}, nil
}
