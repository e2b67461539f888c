/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
	"github.com/rolisdb/rolis/internal/ledger"
	"github.com/rolisdb/rolis/internal/testca"
	"github.com/rolisdb/rolis/internal/testserver"
	"github.com/rolisdb/rolis/pkg/client"
)

// templateRevision names a StatefulSet's pod template as the StatefulSet
// controller would: a hash of it (here of the rolisd arguments, all that
// changes in these specs).
func templateRevision(sts *appsv1.StatefulSet) string {
	h := fnv.New32a()
	for _, a := range sts.Spec.Template.Spec.Containers[0].Args {
		h.Write([]byte(a + "\x00"))
	}
	return fmt.Sprintf("rev-%08x", h.Sum32())
}

// flagsKubelet plays the StatefulSet controller and the kubelet. The
// controller: it publishes the revision of the current template. The
// kubelet: for a pod the operator deleted, it restarts the member's rolisd
// with the TLS flags of the template (the member certificate's files for
// --tls-cert/--tls-key/--tls-ca, and --tls-accept-plaintext when the
// template has it) and makes the pod anew at that revision. It returns a
// stop function.
func flagsKubelet(ctx context.Context, c *dbv1.RolisCluster, procs *testserver.Cluster, member testca.Pair, caFile string) func() {
	base := map[int][]string{}
	for _, m := range procs.Members {
		base[m.ID] = m.Args()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			sts := &appsv1.StatefulSet{}
			Expect(k8s.Get(ctx, byKey(c.Namespace, specs.StatefulSetName(c)), sts)).To(Succeed())
			rev := templateRevision(sts)
			if sts.Status.ObservedGeneration < sts.Generation || sts.Status.UpdateRevision != rev {
				setRevisionOf(ctx, c, rev)
				continue
			}
			for _, id := range specs.MemberIDs(3) {
				name := specs.PodName(c, id)
				if !apierrors.IsNotFound(k8s.Get(ctx, byKey(c.Namespace, name), &corev1.Pod{})) {
					continue
				}
				tmpl := sts.Spec.Template.Spec.Containers[0].Args
				args := slices.Clone(base[int(id)])
				if slices.ContainsFunc(tmpl, func(a string) bool { return strings.HasPrefix(a, "--tls-ca=") }) {
					args = append(args, "--tls-cert="+member.CertFile, "--tls-key="+member.KeyFile, "--tls-ca="+caFile)
				}
				if slices.Contains(tmpl, specs.FlagTLSAcceptPlaintext) {
					args = append(args, specs.FlagTLSAcceptPlaintext)
				}
				m := procs.Member(int(id))
				_, _ = m.Stop(10 * time.Second)
				m.SetArgs(args)
				Expect(m.Restart(30*time.Second)).To(Succeed(), "%s restarts with %v", name, args)
				fmt.Fprintf(GinkgoWriter, "%s restarted at %s with %v\n", name, rev, args[len(base[int(id)]):])
				startProbedPod(ctx, c, m, rev)
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

// checkLedgerOver reads the leader's state with cfg (nil: plaintext) and
// checks every acknowledged write of w is there (w stopped).
func checkLedgerOver(ctx context.Context, c *dbv1.RolisCluster, procs *testserver.Cluster, w *ledger.Workload, cfg *tls.Config) {
	GinkgoHelper()
	w.Stop()
	id, _ := servingLeader(ctx, c)
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	call := w.Now()
	state, err := ledger.Dump(rctx, client.Config{Endpoints: []string{procs.Member(int(id)).ClientAddr}, TLS: cfg}, true)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "ledger: %s\n", w.Check([]ledger.Snapshot{
		{What: fmt.Sprintf("leader db-%d", id), State: state, Leader: true, Call: call, Return: w.Now()}}))
}

// modeAndProgress is the recorded TLS mode, then the Progressing and
// Degraded conditions (what a wait for a mode shows when it times out).
func modeAndProgress(ctx context.Context, c *dbv1.RolisCluster) func() string {
	return func() string {
		return recordedTLSMode(ctx, c)() + " | " + condition(ctx, c, dbv1.ConditionProgressing)() + " | " +
			condition(ctx, c, dbv1.ConditionDegraded)()
	}
}

// movesToTLSUnderLoad turns TLS on for a running plaintext cluster of three
// real rolisd processes under ledger load: the operator's two rollouts, the
// members restarted with the flags of each, and every acknowledged write
// read back over TLS at the end. It runs in the TLS block of
// dependencies_test.go, after cert-manager's API is installed.
func movesToTLSUnderLoad(ctx context.Context) {
	GinkgoHelper()
	// Run alone (a label filter), the specs before it in its block did
	// not install cert-manager's API; installing it again changes nothing.
	installCertManager()
	c, procs, _, _ := startRealCluster(ctx)
	setRevision(ctx, c.Namespace, "rev1")
	Eventually(condition(ctx, c, dbv1.ConditionReady), "60s").Should(HavePrefix("True/"))
	Expect(recordedTLSMode(ctx, c)()).To(Equal(dbv1.TLSModePlaintext))
	w := startLedgerLoad(ctx, procs.ClientAddrs(), 61) // plaintext clients
	Eventually(w.Acked, "20s").Should(BeNumerically(">", 50))

	By("spec.tls.enabled: true; the certificates come first")
	Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(true)} })).To(Succeed())
	Eventually(condition(ctx, c, dbv1.ConditionProgressing), "30s").Should(HavePrefix("True/" + ReasonTLSTransitionIssuing))
	Expect(podArgs(ctx, c)()).NotTo(ContainElement(HavePrefix("--tls")))
	ca := testca.New(GinkgoTB(), "cluster")
	member := issueAsCertManager(ctx, c, ca)
	operator := ca.ClientConfig(GinkgoTB())
	procs.SetProbeTLS(operator) // restarted members take TLS

	By("the first rollout: every member takes TLS and plaintext; the plaintext clients keep writing")
	Eventually(podArgs(ctx, c), "30s").Should(ContainElement(specs.FlagTLSAcceptPlaintext))
	acked := w.Acked()
	stop := flagsKubelet(ctx, c, procs, member, ca.CAFile)
	defer stop()
	Eventually(modeAndProgress(ctx, c), "180s").Should(HavePrefix(dbv1.TLSModeToMutualRequireTLS + " "))
	Expect(w.Acked()).To(BeNumerically(">", acked+20), "writes went on through the first rollout")
	for _, m := range procs.Members {
		Expect(m.Args()).To(ContainElement(specs.FlagTLSAcceptPlaintext))
	}

	By("the second rollout: every member requires TLS; the mode is recorded mutual")
	// The plaintext clients are refused by each member that requires TLS.
	Eventually(modeAndProgress(ctx, c), "180s").Should(HavePrefix(dbv1.TLSModeMutual + " "))
	Eventually(condition(ctx, c, dbv1.ConditionReady), "90s").Should(HavePrefix("True/"))
	for _, m := range procs.Members {
		Expect(m.Args()).NotTo(ContainElement(specs.FlagTLSAcceptPlaintext))
		Expect(m.Args()).To(ContainElement("--tls-ca=" + ca.CAFile))
	}
	Expect(eventReasons(ctx, c)()).To(ContainElements(ReasonTLSTransitionAcceptPlaintext, ReasonTLSTransitionRequireTLS))
	Expect(condition(ctx, c, ConditionTLSDisabled)()).To(Equal("absent"))
	id, _ := servingLeader(ctx, c)
	_, err := memberStatus(procs.Member(int(id)).AdminAddr) // plaintext
	Expect(err).To(HaveOccurred(), "the admin port takes only TLS now")

	By("no acknowledged write was lost across both rollouts (read over TLS)")
	checkLedgerOver(ctx, c, procs, w, operator)
}
