/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

func issuerRef(c *dbv1.RolisCluster) cmmeta.IssuerReference {
	ref := c.Spec.TLS.IssuerRef
	kind, group := ref.Kind, ref.Group
	if kind == "" {
		kind = "Issuer"
	}
	if group == "" {
		group = "cert-manager.io"
	}
	return cmmeta.IssuerReference{Name: ref.Name, Kind: kind, Group: group}
}

// ServerCertificate is the members' certificate: one key pair per cluster
// that serves the client, admin and replication ports and authenticates a
// member to its peers (server and client usages). Its names cover every
// member's peer name and the cluster's Services.
func ServerCertificate(c *dbv1.RolisCluster, o Options) *cmv1.Certificate {
	peers := HeadlessServiceName(c)
	dns := []string{
		"*." + ServiceHost(c, peers, o),
		"*." + peers + "." + c.Namespace + ".svc",
		ServiceHost(c, ClientServiceName(c), o),
		ClientServiceName(c) + "." + c.Namespace + ".svc",
		ServiceHost(c, ReadServiceName(c), o),
		ReadServiceName(c) + "." + c.Namespace + ".svc",
		"localhost",
	}
	return &cmv1.Certificate{
		ObjectMeta: objectMeta(c, ServerCertificateName(c)),
		Spec: cmv1.CertificateSpec{
			SecretName:  ServerSecretName(c),
			CommonName:  ServiceHost(c, ClientServiceName(c), o),
			DNSNames:    dns,
			IPAddresses: []string{"127.0.0.1"},
			IssuerRef:   issuerRef(c),
			PrivateKey:  &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyAlways},
			Usages:      []cmv1.KeyUsage{cmv1.UsageServerAuth, cmv1.UsageClientAuth, cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels: Labels(c),
			},
		},
	}
}

// ClientCertificate authenticates clients of the cluster: the operator (on
// the admin port), rolisctl and applications mount its Secret.
func ClientCertificate(c *dbv1.RolisCluster) *cmv1.Certificate {
	return &cmv1.Certificate{
		ObjectMeta: objectMeta(c, ClientCertificateName(c)),
		Spec: cmv1.CertificateSpec{
			SecretName: ClientSecretName(c),
			CommonName: c.Name + "-client",
			IssuerRef:  issuerRef(c),
			PrivateKey: &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyAlways},
			Usages:     []cmv1.KeyUsage{cmv1.UsageClientAuth, cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels: Labels(c),
			},
		},
	}
}
