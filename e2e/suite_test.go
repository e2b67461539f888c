// Package e2e is the end-to-end suite on the local Kind cluster of
// docs/packaging.md (make kind-up): it uses the product as its users do
// (helm install, kubectl apply, pkg/client through kubectl port-forward) and
// checks the database under chaos with the workload and ledger of
// internal/ledger. docs/e2e.md says how to run it and what it checks.
//
// It runs only when ROLIS_E2E=1 (make e2e, make e2e-full); otherwise it is
// skipped, so `go test ./...` never touches a cluster.
package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// env is the suite's configuration, from the environment.
type env struct {
	Kubectl, Helm string // binaries
	Context       string // kubeconfig context
	Root          string // the repository
	Artifacts     string // where failures are saved
	// FailoverBound is how long a new leader may take after the leader is
	// lost (the sample's failover timeout plus the election).
	FailoverBound time.Duration
}

var E env

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestE2E(t *testing.T) {
	if os.Getenv("ROLIS_E2E") != "1" {
		t.Skip("set ROLIS_E2E=1 (make e2e) to run the end-to-end suite on the Kind cluster")
	}
	root, _ := filepath.Abs("..")
	home, _ := os.UserHomeDir()
	cache := getenv("ROLIS_CACHE", filepath.Join(home, ".cache/rolis"))
	bound, err := time.ParseDuration(getenv("E2E_FAILOVER_BOUND", "30s"))
	if err != nil {
		t.Fatal(err)
	}
	E = env{
		Kubectl:       getenv("KUBECTL", filepath.Join(cache, "k8s-bin/v1.36.3/kubectl")),
		Helm:          getenv("HELM", filepath.Join(cache, "bin/helm")),
		Context:       getenv("KUBE_CONTEXT", "kind-rolis"),
		Root:          root,
		Artifacts:     getenv("E2E_ARTIFACTS", filepath.Join(root, "build/e2e-artifacts")),
		FailoverBound: bound,
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "Rolis end-to-end")
}

var _ = BeforeSuite(func() {
	// A cluster that has just come back from a restarted Docker daemon, on a
	// loaded machine, restarts its API server a few times first: up to 5
	// minutes, then the suite stops.
	var out string
	var err error
	Eventually(func() error {
		out, err = kubectl(30*time.Second, "get", "nodes", "-o", "name")
		return err
	}).WithTimeout(5*time.Minute).WithPolling(5*time.Second).Should(Succeed(),
		func() string { return "the Kind cluster must be up (make kind-up): " + out })
	kube, err = newKubeClient()
	Expect(err).NotTo(HaveOccurred())
	installOperator()
	removeLeftovers()
})
