package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rolisdb/rolis/pkg/client"
)

// servedCertificate is the serial of the certificate a member serves on its
// client port (through the port-forward at addr), verified against files'
// CA, with the client certificate of files.
func servedCertificate(addr string, files map[string]string) (string, error) {
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(files["ca.crt"])
	if err != nil {
		return "", err
	}
	pool.AppendCertsFromPEM(ca)
	pair, err := tls.LoadX509KeyPair(files["tls.crt"], files["tls.key"])
	if err != nil {
		return "", err
	}
	// The member certificate names 127.0.0.1 too (the port-forward's end).
	cfg := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2"}}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// Certificate renewal without a restart (docs/operations.md, "Certificate
// renewal"): cert-manager is made to issue the member certificate again
// (as `cmctl renew` does: the Certificate's Issuing condition set to True),
// the kubelet updates the mounted Secret and every rolisd serves the new
// certificate within --tls-refresh-interval, while a client keeps writing
// and no pod restarts.
var _ = Describe("Certificate renewal", Label("security"), func() {
	It("serves a renewed member certificate without restarting a pod while a client keeps writing", func() {
		ns := newNamespace("e2e-renew")
		dir := GinkgoT().TempDir()
		f := filepath.Join(dir, "cluster.yaml")
		Expect(os.WriteFile(f, []byte(issuerTLSCluster("rolis-renew")), 0o644)).To(Succeed())
		must(time.Minute, "-n", ns, "apply", "-f", f)
		c := waitReady(ns, "rolis-renew", 5*time.Minute)
		pods := podNames("rolis-renew", 3)
		fw := forward(ns, pods)
		files := secretFiles(ns, "rolis-renew-client-tls", dir)

		before := map[string]string{}
		uids, restarts := map[string]string{}, map[string]int{}
		for _, p := range pods {
			Eventually(func() error {
				s, err := servedCertificate(fw.clientAddr(p), files)
				before[p] = s
				return err
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			uids[p], restarts[p] = podUID(ns, p), restartCount(ns, p)
		}
		revision := must(30*time.Second, "-n", ns, "get", "certificate", "rolis-renew-server", "-o", "jsonpath={.status.revision}")
		GinkgoWriter.Printf("member certificate revision %s, served serials %v\n", revision, before)

		By("a client writes all along")
		var ok, failed atomic.Int64
		var lastOK atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var endpoints []string
		for _, p := range pods {
			endpoints = append(endpoints, fw.clientAddr(p))
		}
		cl, err := client.New(ctx, client.Config{Endpoints: endpoints, CAFile: files["ca.crt"], CertFile: files["tls.crt"],
			KeyFile: files["tls.key"]})
		Expect(err).NotTo(HaveOccurred())
		defer cl.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				err := cl.Put(wctx, []byte(fmt.Sprintf("renew/%d", i%100)), []byte(fmt.Sprint(i)))
				wcancel()
				if err == nil {
					ok.Add(1)
					lastOK.Store(time.Now().UnixNano())
				} else if ctx.Err() == nil {
					failed.Add(1)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		Eventually(ok.Load).WithTimeout(time.Minute).Should(BeNumerically(">", 20), "the client writes over TLS")

		By("cert-manager issues the member certificate again (cmctl renew's Issuing condition)")
		renewed := time.Now()
		must(30*time.Second, "-n", ns, "patch", "certificate", "rolis-renew-server", "--subresource=status", "--type=json", "-p",
			fmt.Sprintf(`[{"op":"add","path":"/status/conditions/-","value":{"type":"Issuing","status":"True",`+
				`"reason":"ManuallyTriggered","message":"Certificate re-issuance manually triggered","lastTransitionTime":"%s"}}]`,
				time.Now().UTC().Format(time.RFC3339)))
		Eventually(func() string {
			out, _ := kubectl(30*time.Second, "-n", ns, "get", "certificate", "rolis-renew-server", "-o", "jsonpath={.status.revision}")
			return strings.TrimSpace(out)
		}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).ShouldNot(Equal(revision), "cert-manager issued a new revision")

		By("every member serves the new certificate (kubelet sync, then --tls-refresh-interval), without a restart")
		for _, p := range pods {
			Eventually(func() (string, error) { return servedCertificate(fw.clientAddr(p), files) }).
				WithTimeout(5*time.Minute).WithPolling(5*time.Second).ShouldNot(Equal(before[p]), "%s serves the renewed certificate", p)
		}
		GinkgoWriter.Printf("renewed certificates served %v after the renewal\n", time.Since(renewed))
		for _, p := range pods {
			Expect(podUID(ns, p)).To(Equal(uids[p]), "%s was not replaced", p)
			Expect(restartCount(ns, p)).To(Equal(restarts[p]), "%s's rolisd did not restart", p)
		}
		atRenewal := ok.Load()
		Eventually(ok.Load).WithTimeout(time.Minute).Should(BeNumerically(">", atRenewal+20), "writes go on after the renewal")
		cancel()
		<-done
		GinkgoWriter.Printf("%d writes acknowledged, %d failed (%s)\n", ok.Load(), failed.Load(), describe(c))
		Expect(failed.Load()).To(BeNumerically("<", ok.Load()/10+5), "the renewal does not interrupt the client")
	})
})
