/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rolisdb/rolis/controllers/specs"
)

// The boundary cases of spec.batchTimeout shared with the operator's unit
// tests and rolisd's config tests (api/v1alpha1/testdata/batch-timeouts.txt):
// the API server admits or refuses each as the table says, and for an
// admitted one the operator hands rolisd the flag the table says, the one
// rolisd's test (engine/tests/server/batch_timeout_test.cc) parses.
var _ = Describe("spec.batchTimeout: one range and format for the API server, the operator and rolisd", func() {
	type batchTimeoutCase struct{ value, flag string }
	var admitted, refused []batchTimeoutCase
	f, err := os.Open(filepath.Join("..", "api", "v1alpha1", "testdata", "batch-timeouts.txt"))
	if err != nil {
		panic(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) == 0 || strings.HasPrefix(fs[0], "#"):
		case len(fs) == 4 && fs[1] == "admitted":
			admitted = append(admitted, batchTimeoutCase{fs[0], fs[2]})
		case len(fs) == 2 && fs[1] == "refused":
			refused = append(refused, batchTimeoutCase{value: fs[0]})
		default:
			panic(fmt.Sprintf("batch-timeouts.txt: %q", sc.Text()))
		}
	}
	f.Close()

	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})
	cluster := func(name, batchTimeout string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "db.rolis.io/v1alpha1", "kind": "RolisCluster",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"image": "rolis/rolisd:test", "replicas": int64(1), "batchTimeout": batchTimeout},
		}}
	}

	It("refuses every value out of range", func() {
		Expect(refused).NotTo(BeEmpty())
		for i, c := range refused {
			err := k8s.Create(ctx, cluster(fmt.Sprintf("refused-%d", i), c.value))
			Expect(err).To(MatchError(ContainSubstring("batchTimeout must be between 50us and 1s")), "batchTimeout %s", c.value)
		}
	})

	It("admits every value in range, and hands rolisd the flag its parser is tested with", func() {
		Expect(admitted).NotTo(BeEmpty())
		for i, c := range admitted {
			name := fmt.Sprintf("admitted-%d", i)
			Expect(k8s.Create(ctx, cluster(name, c.value))).To(Succeed(), "batchTimeout %s", c.value)
			Eventually(func(g Gomega) {
				sts := &appsv1.StatefulSet{}
				g.Expect(k8s.Get(ctx, byKey(ns, name), sts)).To(Succeed())
				g.Expect(sts.Spec.Template.Spec.Containers[0].Env).To(ContainElement(
					corev1.EnvVar{Name: specs.EnvBatchTimeout, Value: c.flag}))
				cm := &corev1.ConfigMap{}
				g.Expect(k8s.Get(ctx, byKey(ns, name+"-config"), cm)).To(Succeed())
				g.Expect(cm.Data).To(HaveKeyWithValue(specs.KeyBatchTimeout, c.flag))
			}).Should(Succeed(), "batchTimeout %s", c.value)
		}
	})
})
