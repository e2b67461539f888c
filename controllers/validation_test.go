/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// The API server itself rejects what the operator could never run safely:
// the CRD's OpenAPI schema and CEL rules, not a webhook.
var _ = Describe("Validation by the API server", func() {
	var (
		ctx context.Context
		ns  string
	)
	BeforeEach(func() {
		ctx = context.Background()
		ns = newNamespace(ctx)
	})

	DescribeTable("rejects an invalid RolisCluster on create",
		func(mutate func(c *dbv1.RolisCluster), messages ...string) {
			c := newCluster(ns, "bad", 3)
			mutate(c)
			err := k8s.Create(ctx, c)
			Expect(err).To(HaveOccurred())
			for _, m := range messages {
				Expect(err.Error()).To(ContainSubstring(m))
			}
		},
		Entry("even replicas", func(c *dbv1.RolisCluster) { c.Spec.Replicas = 4 },
			"spec.replicas", "replicas must be odd (1, 3, 5 or 7) so that majorities are well defined"),
		Entry("more than 7 replicas", func(c *dbv1.RolisCluster) { c.Spec.Replicas = 9 },
			"spec.replicas", "should be less than or equal to 7"),
		Entry("negative replicas", func(c *dbv1.RolisCluster) { c.Spec.Replicas = -1 },
			"spec.replicas", "should be greater than or equal to 1"),
		Entry("negative worker threads", func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = -1 },
			"spec.workerThreads", "should be greater than or equal to 1"),
		Entry("more worker threads than replication streams", func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = 12 },
			"spec", "workerThreads must be at most replicationStreams"),
		Entry("a missing image", func(c *dbv1.RolisCluster) { c.Spec.Image = "" },
			"spec.image", "should be at least 1 chars long"),
		Entry("a batch timeout under 50us", func(c *dbv1.RolisCluster) { c.Spec.BatchTimeout = &metav1.Duration{Duration: 49 * time.Microsecond} },
			"spec.batchTimeout", "batchTimeout must be between 50us and 1s"),
		Entry("a failover timeout under a second", func(c *dbv1.RolisCluster) {
			c.Spec.Failover.Timeout = &metav1.Duration{Duration: 100 * time.Millisecond}
		}, "spec.failover.timeout", "failover.timeout must be between 1s and 10m"),
		Entry("a batch size of zero", func(c *dbv1.RolisCluster) { c.Spec.BatchSize = -5 },
			"spec.batchSize", "should be greater than or equal to 1"),
		Entry("a TLS issuer of an unknown kind", func(c *dbv1.RolisCluster) {
			c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca", Kind: "Vault"}}
		}, "spec.tls.issuerRef.kind", "Unsupported value"),
		Entry("a durability other than disk or memory", func(c *dbv1.RolisCluster) { c.Spec.Durability = "tape" },
			`spec.durability: Unsupported value: "tape"`),
		Entry("a name too long for the pods and services made from it", func(c *dbv1.RolisCluster) {
			c.Name = strings.Repeat("a", 46)
		}, "metadata.name must be at most 45 characters"),
	)

	// Zero values and absent fields cannot be sent from the typed client
	// (omitempty), so these go as unstructured objects, the way kubectl
	// sends a manifest.
	raw := func(name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "db.rolis.io/v1alpha1", "kind": "RolisCluster",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     spec,
		}}
		return u
	}

	It("rejects zero worker threads", func() {
		err := k8s.Create(ctx, raw("zero", map[string]any{"image": "x", "workerThreads": int64(0)}))
		Expect(err).To(MatchError(ContainSubstring("spec.workerThreads: Invalid value: 0: spec.workerThreads in body should be greater than or equal to 1")))
	})

	It("rejects zero replicas", func() {
		err := k8s.Create(ctx, raw("zero", map[string]any{"image": "x", "replicas": int64(0)}))
		Expect(err).To(MatchError(ContainSubstring("spec.replicas in body should be greater than or equal to 1")))
	})

	It("rejects a RolisCluster without an image", func() {
		err := k8s.Create(ctx, raw("noimage", map[string]any{"replicas": int64(3)}))
		Expect(err).To(MatchError(ContainSubstring("spec.image: Required value")))
	})

	It("rejects a negative prefaultMemory and takes sizes as strings or bytes", func() {
		err := k8s.Create(ctx, raw("negative", map[string]any{"image": "x", "prefaultMemory": "-1Gi"}))
		Expect(err).To(MatchError(ContainSubstring("prefaultMemory cannot be negative")))
		err = k8s.Create(ctx, raw("negativebytes", map[string]any{"image": "x", "prefaultMemory": int64(-5)}))
		Expect(err).To(MatchError(ContainSubstring("prefaultMemory cannot be negative")))
		Expect(k8s.Create(ctx, raw("fits", map[string]any{
			"image": "x", "prefaultMemory": "1536Mi",
			"resources": map[string]any{"limits": map[string]any{"memory": "2Gi"}},
		}))).To(Succeed())
		Expect(k8s.Create(ctx, raw("bytes", map[string]any{"image": "x", "prefaultMemory": int64(1 << 30)}))).To(Succeed())
	})

	Describe("unsafe changes to immutable fields", func() {
		var c *dbv1.RolisCluster
		BeforeEach(func() {
			c = newCluster(ns, "db", 3)
			c.Spec.Storage.StorageClassName = ptr.To("fast")
			Expect(k8s.Create(ctx, c)).To(Succeed())
		})

		update := func(mutate func(c *dbv1.RolisCluster)) error { return updateCluster(ctx, c, mutate) }

		It("rejects a new storage size", func() {
			err := update(func(c *dbv1.RolisCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("5Gi")) })
			Expect(err).To(MatchError(ContainSubstring("storage.size is immutable")))
		})
		It("rejects a new storage class, and removing it", func() {
			err := update(func(c *dbv1.RolisCluster) { c.Spec.Storage.StorageClassName = ptr.To("slow") })
			Expect(err).To(MatchError(ContainSubstring("storage.storageClassName is immutable")))
			err = update(func(c *dbv1.RolisCluster) { c.Spec.Storage.StorageClassName = nil })
			Expect(err).To(MatchError(ContainSubstring("storage.storageClassName is immutable")))
		})
		It("accepts turning TLS on (the operator moves the members in two rollouts), not off again", func() {
			Expect(update(func(c *dbv1.RolisCluster) {
				c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}
			})).To(Succeed())
			err := update(func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(false)} })
			Expect(err).To(MatchError(ContainSubstring("tls.enabled cannot be turned off after creation")))
		})
		It("rejects an even replica count on update too", func() {
			err := update(func(c *dbv1.RolisCluster) { c.Spec.Replicas = 2 })
			Expect(err).To(MatchError(ContainSubstring("replicas must be odd")))
		})
		It("rejects a new number of replication streams", func() {
			err := update(func(c *dbv1.RolisCluster) { c.Spec.ReplicationStreams = 16 })
			Expect(err).To(MatchError(ContainSubstring("replicationStreams is immutable")))
		})
		It("defaults durability to disk and rejects changing it either way", func() {
			Expect(getCluster(ctx, c).Spec.Durability).To(Equal(dbv1.DurabilityDisk), "defaulted")
			err := update(func(c *dbv1.RolisCluster) { c.Spec.Durability = dbv1.DurabilityMemory })
			Expect(err).To(MatchError(ContainSubstring("durability is immutable")))
			m := newCluster(ns, "mem", 3)
			m.Spec.Durability = dbv1.DurabilityMemory
			Expect(k8s.Create(ctx, m)).To(Succeed())
			err = updateCluster(ctx, m, func(c *dbv1.RolisCluster) { c.Spec.Durability = dbv1.DurabilityDisk })
			Expect(err).To(MatchError(ContainSubstring("durability is immutable")))
		})
		It("accepts a new number of worker threads up to the streams, not beyond", func() {
			Expect(update(func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = 1 })).To(Succeed())
			Expect(update(func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = dbv1.DefaultReplicationStreams })).To(Succeed())
			err := update(func(c *dbv1.RolisCluster) { c.Spec.WorkerThreads = dbv1.DefaultReplicationStreams + 1 })
			Expect(err).To(MatchError(ContainSubstring("workerThreads must be at most replicationStreams")))
		})
		It("accepts safe changes: replicas, batching, failover timeout, resources", func() {
			Expect(update(func(c *dbv1.RolisCluster) {
				c.Spec.Replicas = 5
				c.Spec.BatchSize = 50
				c.Spec.BatchTimeout = &metav1.Duration{Duration: 500 * time.Microsecond}
				c.Spec.Failover.Timeout = &metav1.Duration{Duration: 10 * time.Second}
			})).To(Succeed())
		})
	})

	It("accepts the sample of config/samples", func() {
		data, err := os.ReadFile(filepath.Join("..", "config", "samples", "db_v1alpha1_roliscluster.yaml"))
		Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal(data, &u.Object)).To(Succeed())
		u.SetNamespace(ns)
		Expect(k8s.Create(ctx, u)).To(Succeed())
		c := &dbv1.RolisCluster{}
		Expect(k8s.Get(ctx, byKey(ns, u.GetName()), c)).To(Succeed())
		Expect(c.Spec.Replicas).To(Equal(int32(3)))
	})

	It("rejects turning TLS off, and accepts spelling out what the default already is", func() {
		c := newCluster(ns, "tls", 1)
		c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		Expect(getCluster(ctx, c).Spec.TLS.IssuerRef.Kind).To(Equal("Issuer"), "defaulted")
		// (updateCluster retries when the operator wrote the cluster in between.)
		err := updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.TLS.Enabled = ptr.To(false) })
		Expect(err).To(MatchError(ContainSubstring("tls.enabled cannot be turned off after creation")))

		// TLS is on by default: removing the block, or adding one that
		// leaves enabled unset or true, changes nothing the members run.
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) { c.Spec.TLS = nil })).To(Succeed())
		Expect(updateCluster(ctx, c, func(c *dbv1.RolisCluster) {
			c.Spec.TLS = &dbv1.TLSSpec{Enabled: ptr.To(true), ReadOnlyClient: true}
		})).To(Succeed())
		d := newCluster(ns, "default-tls", 1)
		d.Spec.TLS = nil
		Expect(k8s.Create(ctx, d)).To(Succeed())
		Expect(updateCluster(ctx, d, func(c *dbv1.RolisCluster) {
			c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "corp", Kind: "ClusterIssuer"}}
		})).To(Succeed())
		err = updateCluster(ctx, d, func(c *dbv1.RolisCluster) { c.Spec.TLS.Enabled = ptr.To(false) })
		Expect(err).To(MatchError(ContainSubstring("tls.enabled cannot be turned off after creation")))
	})
})
