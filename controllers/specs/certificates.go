/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"strings"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// Certificate kinds of the identity model (docs/operations.md,
// "Certificate identities"): the last part of the URI SAN before the name.
const (
	IdentityMember         = "member"
	IdentityOperator       = "operator"
	IdentityClient         = "client"
	IdentityClientReadOnly = "client-readonly"
)

// TrustDomain is the SPIFFE trust domain of a cluster's certificates,
// rolis.<namespace>.<cluster> in lower case (rolisd's --tls-trust-domain).
func TrustDomain(c *dbv1.RolisCluster) string {
	return strings.ToLower("rolis." + c.Namespace + "." + c.Name)
}

// IdentityURI is the URI SAN of a certificate of kind, with an optional name.
func IdentityURI(c *dbv1.RolisCluster, kind, name string) string {
	u := "spiffe://" + TrustDomain(c) + "/" + kind
	if name != "" {
		u += "/" + name
	}
	return u
}

func issuerRef(c *dbv1.RolisCluster) cmmeta.IssuerReference {
	if c.DefaultIssuer() {
		return cmmeta.IssuerReference{Name: CAIssuerName(c), Kind: "Issuer", Group: "cert-manager.io"}
	}
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

// IssuerDescription names the issuer of the cluster's certificates, for messages.
func IssuerDescription(c *dbv1.RolisCluster) string {
	ref := issuerRef(c)
	return ref.Kind + "/" + ref.Name
}

func privateKey() *cmv1.CertificatePrivateKey {
	return &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyAlways}
}

// ServerCertificate is the members' certificate (identity "member"): one
// key pair per cluster that serves the client, admin, replication and
// metrics ports and authenticates a member to its peers (server and client
// usages). Its names cover every member's peer name and the cluster's
// Services.
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
			URIs:        []string{IdentityURI(c, IdentityMember, "")},
			IssuerRef:   issuerRef(c),
			PrivateKey:  privateKey(),
			Usages:      []cmv1.KeyUsage{cmv1.UsageServerAuth, cmv1.UsageClientAuth, cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels: Labels(c),
			},
		},
	}
}

func clientCertificate(c *dbv1.RolisCluster, name, secret, commonName, uri string) *cmv1.Certificate {
	return &cmv1.Certificate{
		ObjectMeta: objectMeta(c, name),
		Spec: cmv1.CertificateSpec{
			SecretName: secret,
			CommonName: commonName,
			URIs:       []string{uri},
			IssuerRef:  issuerRef(c),
			PrivateKey: privateKey(),
			Usages:     []cmv1.KeyUsage{cmv1.UsageClientAuth, cmv1.UsageDigitalSignature, cmv1.UsageKeyEncipherment},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels: Labels(c),
			},
		},
	}
}

// OperatorCertificate authenticates the operator to the members' admin
// port (identity "operator": every Admin RPC and the client service).
func OperatorCertificate(c *dbv1.RolisCluster) *cmv1.Certificate {
	return clientCertificate(c, OperatorCertificateName(c), OperatorSecretName(c), c.Name+"-operator",
		IdentityURI(c, IdentityOperator, ""))
}

// ClientCertificate authenticates applications and rolisctl (identity
// "client/<cluster>-client": the Rolis client service and Admin.Status).
func ClientCertificate(c *dbv1.RolisCluster) *cmv1.Certificate {
	return clientCertificate(c, ClientCertificateName(c), ClientSecretName(c), c.Name+"-client",
		IdentityURI(c, IdentityClient, c.Name+"-client"))
}

// ReadOnlyClientCertificate is issued with spec.tls.readOnlyClient
// (identity "client-readonly/<cluster>-client-readonly": reads only).
func ReadOnlyClientCertificate(c *dbv1.RolisCluster) *cmv1.Certificate {
	return clientCertificate(c, ReadOnlyClientCertificateName(c), ReadOnlyClientSecretName(c), c.Name+"-client-readonly",
		IdentityURI(c, IdentityClientReadOnly, c.Name+"-client-readonly"))
}

// Certificates are every certificate the cluster's spec asks for, the
// member certificate first.
func Certificates(c *dbv1.RolisCluster, o Options) []*cmv1.Certificate {
	certs := []*cmv1.Certificate{ServerCertificate(c, o), OperatorCertificate(c), ClientCertificate(c)}
	if c.Spec.TLS != nil && c.Spec.TLS.ReadOnlyClient {
		certs = append(certs, ReadOnlyClientCertificate(c))
	}
	return certs
}

// SelfSignedIssuer only signs the cluster's CA certificate (the start of
// the default chain: self-signed Issuer -> CA Certificate -> CA Issuer).
func SelfSignedIssuer(c *dbv1.RolisCluster) *cmv1.Issuer {
	return &cmv1.Issuer{
		ObjectMeta: objectMeta(c, SelfSignedIssuerName(c)),
		Spec:       cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{SelfSigned: &cmv1.SelfSignedIssuer{}}},
	}
}

// CACertificate is the cluster's own CA, made when spec.tls names no
// issuer. Its key is kept on renewal (RotationPolicyNever), so that
// certificates it signed stay trusted while it is renewed.
func CACertificate(c *dbv1.RolisCluster) *cmv1.Certificate {
	return &cmv1.Certificate{
		ObjectMeta: objectMeta(c, CACertificateName(c)),
		Spec: cmv1.CertificateSpec{
			IsCA:       true,
			CommonName: TrustDomain(c) + " CA",
			SecretName: CASecretName(c),
			URIs:       []string{"spiffe://" + TrustDomain(c)},
			IssuerRef:  cmmeta.IssuerReference{Name: SelfSignedIssuerName(c), Kind: "Issuer", Group: "cert-manager.io"},
			PrivateKey: &cmv1.CertificatePrivateKey{Algorithm: cmv1.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmv1.RotationPolicyNever},
			Usages:     []cmv1.KeyUsage{cmv1.UsageCertSign, cmv1.UsageCRLSign, cmv1.UsageDigitalSignature},
			SecretTemplate: &cmv1.CertificateSecretTemplate{
				Labels: Labels(c),
			},
		},
	}
}

// CAIssuer signs the cluster's certificates with the CA of CACertificate.
func CAIssuer(c *dbv1.RolisCluster) *cmv1.Issuer {
	return &cmv1.Issuer{
		ObjectMeta: objectMeta(c, CAIssuerName(c)),
		Spec:       cmv1.IssuerSpec{IssuerConfig: cmv1.IssuerConfig{CA: &cmv1.CAIssuer{SecretName: CASecretName(c)}}},
	}
}
