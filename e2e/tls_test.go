package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rolisdb/rolis/pkg/client"
)

// issuerTLSCluster is a 3-member RolisCluster named name whose certificates
// come from the cert-manager add-on's rolis-ca ClusterIssuer.
func issuerTLSCluster(name string) string {
	return `apiVersion: db.rolis.io/v1alpha1
kind: RolisCluster
metadata:
  name: ` + name + `
spec:
  replicas: 3
  image: rolis/rolisd:0.1.0
  storage:
    size: 256Mi
  tls:
    issuerRef:
      kind: ClusterIssuer
      name: rolis-ca
`
}

// secretFiles writes the keys of a Secret into dir; it returns their paths.
func secretFiles(ns, name, dir string) map[string]string {
	GinkgoHelper()
	var sec struct {
		Data map[string]string `json:"data"`
	}
	Expect(json.Unmarshal([]byte(must(30*time.Second, "-n", ns, "get", "secret", name, "-o", "json")), &sec)).To(Succeed())
	out := map[string]string{}
	for k, v := range sec.Data {
		b, err := base64.StdEncoding.DecodeString(v)
		Expect(err).NotTo(HaveOccurred())
		out[k] = filepath.Join(dir, k)
		Expect(os.WriteFile(out[k], b, 0o600)).To(Succeed())
	}
	return out
}

var _ = Describe("TLS with cert-manager", Label("tls"), func() {
	It("members become Ready over mutual TLS; a client with the cluster's client certificate is served, one without is refused", func() {
		ns := newNamespace("e2e-tls")
		dir := GinkgoT().TempDir()
		f := filepath.Join(dir, "cluster.yaml")
		Expect(os.WriteFile(f, []byte(issuerTLSCluster("rolis-tls")), 0o644)).To(Succeed())
		must(time.Minute, "-n", ns, "apply", "-f", f)
		c := waitReady(ns, "rolis-tls", 5*time.Minute)
		GinkgoWriter.Println("rolis-tls:", describe(c))
		fw := forward(ns, podNames("rolis-tls", 3))
		leader := fw.clientAddr(c.Status.Leader)
		files := secretFiles(ns, "rolis-tls-client-tls", dir)

		put := func(cfg client.Config) error {
			cfg.Endpoints, cfg.MaxRedirects = []string{leader}, -1
			cl, err := client.New(context.Background(), cfg)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return cl.Put(ctx, []byte("tls/probe"), []byte("1"))
		}
		By("a client with the client certificate")
		Eventually(func() error {
			return put(client.Config{CAFile: files["ca.crt"], CertFile: files["tls.crt"], KeyFile: files["tls.key"]})
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		By("a client that trusts the CA but has no certificate, and a plaintext client")
		Expect(put(client.Config{CAFile: files["ca.crt"]})).NotTo(Succeed())
		Expect(put(client.Config{})).NotTo(Succeed())
	})
})
