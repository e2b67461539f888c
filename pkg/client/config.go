package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Config configures a Client.
type Config struct {
	// Endpoints are the client addresses (host:port) of one or more replicas.
	// Calls go to the first one until a not-leader reply names the leader.
	Endpoints []string

	// TLS, if set, is used as is. Otherwise, when CAFile (or CertFile) is
	// set, a TLS configuration is built from the files; when neither is set
	// the connection is plaintext.
	TLS *tls.Config
	// CAFile is a PEM bundle of the CAs that sign the server certificates;
	// empty means the system roots (when CertFile is set).
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS. They
	// are read again at each handshake when they changed on disk, so a
	// rotated client certificate is picked up by new connections.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string

	// MaxRedirects bounds the not-leader hops of one call; 0 means 3, and
	// a negative value means none (the call stays on the endpoint it
	// reached, as reading one member's state or probing a member needs).
	MaxRedirects int
	// Retry governs Txn and the retry of one-shot calls after ErrAborted.
	// The zero value means DefaultRetryPolicy().
	Retry RetryPolicy
	// ServerRetries is ExecuteRequest.max_retries: how often the server
	// itself reruns a one-shot transaction after a conflict before replying
	// ABORTED; 0 leaves it to the server.
	ServerRetries uint32
	// ConnsPerEndpoint opens this many HTTP/2 connections per address and
	// spreads calls over them round-robin; 0 means 1.
	ConnsPerEndpoint int
	// MaxMessageSize bounds a received message; 0 means 64 MiB.
	MaxMessageSize int
	// DialTimeout, when > 0, makes New wait until the first endpoint is
	// connected (or fail). 0 connects lazily at the first call.
	DialTimeout time.Duration
	// KeepaliveTime, when > 0, sends HTTP/2 pings after this much idle time
	// to detect dead servers. Off by default: servers reject frequent pings.
	KeepaliveTime time.Duration
}

// tlsConfig returns the TLS configuration to dial with, or nil for plaintext.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLS != nil {
		return c.TLS.Clone(), nil
	}
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("rolis: reading CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("rolis: no PEM certificate in CA file %s", c.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("rolis: a client certificate needs both CertFile and KeyFile")
	}
	if c.CertFile != "" {
		kp := &keyPairReloader{certFile: c.CertFile, keyFile: c.KeyFile}
		if _, err := kp.get(); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return kp.get()
		}
	}
	return cfg, nil
}

// keyPairReloader loads a certificate and key, and loads them again when
// either file's modification time or size changed.
type keyPairReloader struct {
	certFile, keyFile string

	mu     sync.Mutex
	cert   *tls.Certificate
	stamps [2]fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{st.ModTime(), st.Size()}, nil
}

func (k *keyPairReloader) get() (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cs, err1 := stampOf(k.certFile)
	ks, err2 := stampOf(k.keyFile)
	if err := errors.Join(err1, err2); err != nil {
		if k.cert != nil {
			return k.cert, nil // keep the last good pair during a rotation
		}
		return nil, fmt.Errorf("rolis: client certificate: %w", err)
	}
	if k.cert != nil && k.stamps == [2]fileStamp{cs, ks} {
		return k.cert, nil
	}
	pair, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		if k.cert != nil {
			return k.cert, nil
		}
		return nil, fmt.Errorf("rolis: client certificate: %w", err)
	}
	k.cert, k.stamps = &pair, [2]fileStamp{cs, ks}
	return k.cert, nil
}
