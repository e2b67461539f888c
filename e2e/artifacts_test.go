package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
)

// saveArtifacts writes the state of namespace ns and of the operator under
// E.Artifacts/<spec>/: resources, events, and every pod's logs (the previous
// container's too).
func saveArtifacts(ns string) {
	name := fileName(CurrentSpecReport().FullText())
	dir := filepath.Join(E.Artifacts, time.Now().Format("150405")+"-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		GinkgoWriter.Printf("artifacts: %v\n", err)
		return
	}
	save := func(file string, args ...string) {
		out, err := kubectl(time.Minute, args...)
		if err != nil {
			out += "\n" + err.Error()
		}
		_ = os.WriteFile(filepath.Join(dir, file), []byte(out), 0o644)
	}
	for _, n := range []string{ns, operatorNS} {
		save(n+"-resources.yaml", "-n", n, "get", "rolisclusters,statefulsets,pods,services,endpoints,configmaps,leases,pvc", "-o", "yaml")
		save(n+"-events.txt", "-n", n, "get", "events", "--sort-by=.lastTimestamp")
		pods, _ := kubectl(30*time.Second, "-n", n, "get", "pods", "-o", "name")
		for _, p := range strings.Fields(pods) {
			base := strings.TrimPrefix(p, "pod/")
			save(n+"-"+base+".log", "-n", n, "logs", p, "--all-containers", "--tail=5000")
			save(n+"-"+base+".previous.log", "-n", n, "logs", p, "--all-containers", "--previous", "--tail=5000")
		}
	}
	GinkgoWriter.Printf("saved the cluster's state under %s\n", dir)
}

// fileName makes a short file name of a spec's text: its first words, with
// letters, digits and dashes only.
func fileName(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	})
	return strings.Join(words[:min(8, len(words))], "-")
}
