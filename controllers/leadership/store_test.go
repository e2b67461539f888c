/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

func fakeClient(objs ...client.Object) client.Client {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func epochCM() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "db-epoch", Namespace: "ns"},
		Data:       map[string]string{specs.KeyEpochRecord: "{}", specs.KeyEpoch: "0"},
	}
}

func TestRecordEncodingRoundTrips(t *testing.T) {
	g := NewWithT(t)
	rec := &rolisv1.EpochRecord{Epoch: 3, LeaderId: 2, Cut: map[uint64]uint64{1: 40, 2: 77}, Watermark: key(2, 77)}
	s, err := EncodeRecord(rec)
	g.Expect(err).NotTo(HaveOccurred())
	back, err := DecodeRecord(s)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.GetCut()).To(Equal(rec.GetCut()))
	g.Expect(back.GetEpoch()).To(Equal(uint64(3)))
	empty, err := DecodeRecord("")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty.GetEpoch()).To(BeZero())
	_, err = DecodeRecord("{not json")
	g.Expect(err).To(HaveOccurred())
}

func TestConfigMapStoreCompareAndSwap(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fakeClient(epochCM())
	s := &ConfigMapStore{Reader: c, Writer: c, Key: types.NamespacedName{Namespace: "ns", Name: "db-epoch"}}

	st, err := s.Load(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Record.GetEpoch()).To(BeZero())

	next, err := s.CompareAndSwap(ctx, st.Version, &rolisv1.EpochRecord{Epoch: 1, LeaderId: 2})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(next.Version).NotTo(Equal(st.Version))

	cm := &corev1.ConfigMap{}
	g.Expect(c.Get(ctx, s.Key, cm)).To(Succeed())
	g.Expect(cm.Data[specs.KeyEpoch]).To(Equal("1"))
	g.Expect(cm.Data[specs.KeyLeader]).To(Equal("2"))

	_, err = s.CompareAndSwap(ctx, st.Version, &rolisv1.EpochRecord{Epoch: 2})
	g.Expect(errors.Is(err, ErrSuperseded)).To(BeTrue(), "a stale version must lose")

	_, err = s.CompareAndSwap(ctx, next.Version, &rolisv1.EpochRecord{Epoch: 1})
	g.Expect(errors.Is(err, ErrSuperseded)).To(BeTrue(), "an epoch that is not above the decided one must lose")

	// A membership change: the same epoch with the next configuration.
	members := []*rolisv1.Member{{Id: 1, Address: "a:1"}, {Id: 2, Address: "b:1"}}
	cfg, err := s.CompareAndSwap(ctx, next.Version, &rolisv1.EpochRecord{Epoch: 1, LeaderId: 2, Config: 1, Members: members})
	g.Expect(err).NotTo(HaveOccurred())
	back, err := s.Load(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back.Record.GetConfig()).To(Equal(uint64(1)))
	g.Expect(back.Record.GetMembers()).To(HaveLen(2))
	_, err = s.CompareAndSwap(ctx, cfg.Version, &rolisv1.EpochRecord{Epoch: 1, Config: 1})
	g.Expect(errors.Is(err, ErrSuperseded)).To(BeTrue(), "the same configuration again must lose")
}

func TestConfigMapStoreErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	missing := &ConfigMapStore{Reader: fakeClient(), Writer: fakeClient(), Key: types.NamespacedName{Namespace: "ns", Name: "db-epoch"}}
	_, err := missing.Load(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("read epoch record ns/db-epoch")))

	bad := epochCM()
	bad.Data[specs.KeyEpochRecord] = "garbage"
	c := fakeClient(bad)
	corrupt := &ConfigMapStore{Reader: c, Writer: c, Key: missing.Key}
	_, err = corrupt.Load(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("corrupt")))
}

func lease(holder string, renewed time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "db-failover", Namespace: "ns"}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
		l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
		l.Spec.LeaseDurationSeconds = ptr.To(int32(30))
	}
	return l
}

func TestPromotionLeaseSerializesHolders(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := fakeClient(lease("", now))
	key := types.NamespacedName{Namespace: "ns", Name: "db-failover"}
	a := &PromotionLease{Reader: c, Writer: c, Key: key, Holder: "a", Duration: 30 * time.Second, Now: func() time.Time { return now }}
	b := &PromotionLease{Reader: c, Writer: c, Key: key, Holder: "b", Duration: 30 * time.Second, Now: func() time.Time { return now }}

	g.Expect(a.Acquire(ctx)).To(Succeed())
	g.Expect(a.Acquire(ctx)).To(Succeed(), "re-entrant for the same holder")
	g.Expect(errors.Is(b.Acquire(ctx), ErrLeaseHeld)).To(BeTrue())

	g.Expect(b.Release(ctx)).To(Succeed(), "releasing a lease one does not hold is a no-op")
	g.Expect(errors.Is(b.Acquire(ctx), ErrLeaseHeld)).To(BeTrue())

	g.Expect(a.Release(ctx)).To(Succeed())
	g.Expect(b.Acquire(ctx)).To(Succeed())
}

func TestPromotionLeaseExpiresWhenItsHolderDied(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := fakeClient(lease("dead", now.Add(-31*time.Second)))
	l := &PromotionLease{Reader: c, Writer: c, Key: types.NamespacedName{Namespace: "ns", Name: "db-failover"},
		Holder: "me", Duration: 30 * time.Second, Now: func() time.Time { return now }}
	g.Expect(l.Acquire(ctx)).To(Succeed())
	got := &coordinationv1.Lease{}
	g.Expect(c.Get(ctx, l.Key, got)).To(Succeed())
	g.Expect(*got.Spec.HolderIdentity).To(Equal("me"))
	g.Expect(*got.Spec.LeaseTransitions).To(Equal(int32(1)))

	missing := &PromotionLease{Reader: fakeClient(), Writer: fakeClient(), Key: l.Key, Holder: "me", Duration: time.Second}
	g.Expect(missing.Acquire(ctx)).To(MatchError(ContainSubstring("read lease")))
}
