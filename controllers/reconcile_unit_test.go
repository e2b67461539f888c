/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

// Unit tests of the reconciler's error paths with controller-runtime's fake
// client (no API server): faults that are hard to cause on a real one.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/leadership"
	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// unitAdmin is a member for unit tests: a fixed Status, counted calls.
type unitAdmin struct {
	mu      sync.Mutex
	status  *rolisv1.StatusResponse
	calls   map[string]int
	prepErr error
	openErr error
	// statusErr, when set, is what Status answers (a member that does not answer).
	statusErr error
	// missed, while not empty, is what the next Status calls answer, one each.
	missed []error
}

func (a *unitAdmin) count(m string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls[m]++
}

func (a *unitAdmin) Status(context.Context) (*rolisv1.StatusResponse, error) {
	a.count("Status")
	a.mu.Lock()
	if len(a.missed) > 0 {
		err := a.missed[0]
		a.missed = a.missed[1:]
		a.mu.Unlock()
		return nil, err
	}
	a.mu.Unlock()
	if a.statusErr != nil {
		return nil, a.statusErr
	}
	return a.status, nil
}

func (a *unitAdmin) PrepareFailover(_ context.Context, r *rolisv1.PrepareFailoverRequest) (*rolisv1.PrepareFailoverResponse, error) {
	a.count("PrepareFailover")
	if a.prepErr != nil {
		return nil, a.prepErr
	}
	return &rolisv1.PrepareFailoverResponse{Proposed: &rolisv1.EpochRecord{Epoch: r.NewEpoch, LeaderId: a.status.Id}}, nil
}

func (a *unitAdmin) OpenEpoch(context.Context, *rolisv1.OpenEpochRequest) (*rolisv1.OpenEpochResponse, error) {
	a.count("OpenEpoch")
	if a.openErr != nil {
		return nil, a.openErr
	}
	return &rolisv1.OpenEpochResponse{}, nil
}

func (a *unitAdmin) AnnounceLeader(context.Context, *rolisv1.AnnounceLeaderRequest) error {
	a.count("AnnounceLeader")
	return nil
}

func (a *unitAdmin) ChangeMembership(context.Context, *rolisv1.ChangeMembershipRequest) (*rolisv1.ChangeMembershipResponse, error) {
	a.count("ChangeMembership")
	return nil, status.Error(codes.Internal, "unexpected")
}

func (a *unitAdmin) Close() error { return nil }

type unitDialer map[int32]*unitAdmin

func (d unitDialer) Dial(_ context.Context, t leadership.Target) (leadership.AdminClient, error) {
	if a, ok := d[t.ID]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no member %d", t.ID)
}

func followers(n int32) unitDialer {
	d := unitDialer{}
	for id := int32(1); id <= n; id++ {
		d[id] = &unitAdmin{calls: map[string]int{}, status: &rolisv1.StatusResponse{
			Id: uint32(id), Role: rolisv1.Role_FOLLOWER, Healthy: true, Watermark: &rolisv1.LogKey{},
		}}
	}
	return d
}

type unitEnv struct {
	c      client.Client
	r      *Reconciler
	rec    *events.FakeRecorder
	dialer unitDialer
	db     *dbv1.RolisCluster
}

// newUnitEnv makes a cluster with its pods, the given members and a fake
// client with optional interceptors.
func newUnitEnv(t *testing.T, replicas int32, d unitDialer, funcs interceptor.Funcs, objs ...client.Object) *unitEnv {
	t.Helper()
	db := &dbv1.RolisCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid", Generation: 1,
			Annotations: map[string]string{dbv1.AnnotationTLSMode: dbv1.TLSModePlaintext, dbv1.AnnotationTLSModeReason: ReasonTLSDisabledBySpec}},
		Spec: dbv1.RolisClusterSpec{Replicas: replicas, Image: "img", TLS: plaintextTLS()},
	}
	objs = append(objs, db)
	for id := int32(1); id <= replicas; id++ {
		labels := specs.Labels(db)
		labels[specs.LabelPodIndex] = strconv.Itoa(int(id))
		labels[appsv1.ControllerRevisionHashLabelKey] = "r1"
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: specs.PodName(db, id), Namespace: "ns", Labels: labels, UID: types.UID(fmt.Sprintf("uid-%d", id))},
			Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(objs...).
		WithStatusSubresource(&dbv1.RolisCluster{}).WithInterceptorFuncs(funcs).Build()
	rec := events.NewFakeRecorder(200)
	r := &Reconciler{Client: c, APIReader: c, Scheme: c.Scheme(), Recorder: rec, Dialer: d,
		Options: specs.DefaultOptions(), Timeouts: leadership.DefaultTimeouts(), Identity: "me"}
	return &unitEnv{c: c, r: r, rec: rec, dialer: d, db: db}
}

func (e *unitEnv) reconcile(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.db)})
}

func (e *unitEnv) condition(t *testing.T, typ string) metav1.Condition {
	t.Helper()
	cur := &dbv1.RolisCluster{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.db), cur); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(cur.Status.Conditions, typ)
	if cond == nil {
		return metav1.Condition{Type: typ, Reason: "absent"}
	}
	return *cond
}

func TestAnAPIErrorInAStepIsReturnedAndReportedAsDegraded(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*appsv1.StatefulSet); ok {
				return apierrors.NewInternalError(fmt.Errorf("etcd is on fire"))
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	_, err := e.reconcile(t)
	g.Expect(err).To(MatchError(ContainSubstring("step statefulset")))
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.Reason).To(Equal("StepFailed"))
	g.Expect(cond.Message).To(ContainSubstring("etcd is on fire"))
	for _, a := range e.dialer {
		g.Expect(a.calls["Status"]).To(BeZero(), "later steps do not run after a failed one")
	}
}

func TestAConflictFromAStaleCacheIsRetriedQuietly(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Service); ok {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, obj.GetName())
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	res, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(time.Second))
	g.Expect(e.condition(t, dbv1.ConditionDegraded).Status).NotTo(Equal(metav1.ConditionTrue))
}

func TestAPromotionWaitsWhileAnotherOperatorHoldsTheLease(t *testing.T) {
	g := NewWithT(t)
	held := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "db-failover", Namespace: "ns"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other-operator"), LeaseDurationSeconds: ptr.To(int32(60)),
			RenewTime: &metav1.MicroTime{Time: time.Now()}},
	}
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{}, held)
	res, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", 2*time.Second), "comes back soon to try again")
	for _, a := range e.dialer {
		g.Expect(a.calls["PrepareFailover"]).To(BeZero())
	}
	cond := e.condition(t, dbv1.ConditionProgressing)
	g.Expect(cond.Message).To(ContainSubstring("held by another operator: other-operator"))
}

func TestNoElectionWhenTheEpochRecordWasLost(t *testing.T) {
	g := NewWithT(t)
	d := followers(3)
	d[2].status.Decided = &rolisv1.EpochRecord{Epoch: 3, LeaderId: 2}
	e := newUnitEnv(t, 3, d, interceptor.Funcs{})
	res, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(probeInterval(e.db)), "comes back at the probe pace, not in a loop")
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Reason).To(Equal(ReasonEpochRecordLost))
	g.Expect(cond.Message).To(ContainSubstring("db-2 knows decided epoch 3"))
	for _, a := range d {
		g.Expect(a.calls["PrepareFailover"]).To(BeZero(), "electing from an empty record could void decided writes")
	}
}

func TestACorruptEpochRecordFailsTheLeadershipStep(t *testing.T) {
	g := NewWithT(t)
	bad := specs.EpochConfigMap(&dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}})
	bad.Data[specs.KeyEpochRecord] = "{broken"
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{}, bad)
	_, err := e.reconcile(t)
	g.Expect(err).To(MatchError(ContainSubstring("step leadership")))
	g.Expect(e.condition(t, dbv1.ConditionDegraded).Message).To(ContainSubstring("corrupt"))
}

func TestAFailedPromotionBacksOffExponentially(t *testing.T) {
	g := NewWithT(t)
	d := followers(3)
	for _, a := range d {
		a.prepErr = status.Error(codes.DeadlineExceeded, "no majority of promises")
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := newUnitEnv(t, 3, d, interceptor.Funcs{})
	e.r.Now = func() time.Time { return now }

	res, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(Equal(probeInterval(e.db)), "the periodic probe comes first")
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Reason).To(Equal(ReasonPromotionFailed))
	g.Expect(cond.Message).To(ContainSubstring("DeadlineExceeded: no majority of promises"))
	g.Expect(d[1].calls["PrepareFailover"]).To(Equal(1))

	_, _ = e.reconcile(t) // within the backoff: no attempt
	g.Expect(d[1].calls["PrepareFailover"]).To(Equal(1))

	for i, wait := range []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second} {
		now = now.Add(wait)
		_, _ = e.reconcile(t)
		g.Expect(d[1].calls["PrepareFailover"]).To(Equal(i+2), "attempt after %s", wait)
	}
	mem := e.r.memoryOf(client.ObjectKeyFromObject(e.db))
	g.Expect(mem.promotion.notBefore.Sub(now)).To(Equal(24*time.Second), "3s (the default failover.timeout), 6s, 12s, 24s...")
}

func TestScalingWithoutAMembershipFromTheLeaderSaysWhy(t *testing.T) {
	g := NewWithT(t)
	e := servingCluster(t)
	d := e.dialer
	for _, a := range d {
		a.status.Members = nil
	}
	_, err := e.reconcile(t) // creates the StatefulSet with 3 replicas
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))

	cur := &dbv1.RolisCluster{}
	g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(e.db), cur)).To(Succeed())
	cur.Spec.Replicas = 5
	g.Expect(e.c.Update(context.Background(), cur)).To(Succeed())
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	cond := e.condition(t, dbv1.ConditionDegraded)
	g.Expect(cond.Reason).To(Equal(ReasonMembershipUnknown))
	g.Expect(d[1].calls["ChangeMembership"]).To(BeZero())
	sts := &appsv1.StatefulSet{}
	g.Expect(e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "db"}, sts)).To(Succeed())
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(3)), "nothing grows without a safe membership change")
}

// servingCluster is a 3-member cluster whose member 1 leads epoch 1.
func servingCluster(t *testing.T, objs ...client.Object) *unitEnv {
	d := followers(3)
	d[1].status.Role, d[1].status.Epoch = rolisv1.Role_LEADER, 1
	rec := &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
	cm := specs.EpochConfigMap(&dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}})
	enc, _ := leadership.EncodeRecord(rec)
	cm.Data[specs.KeyEpochRecord] = enc
	for _, a := range d {
		a.status.Decided, a.status.LeaderId = rec, 1
		a.status.Members = []*rolisv1.Member{{Id: 1}, {Id: 2}, {Id: 3}}
	}
	return newUnitEnv(t, 3, d, interceptor.Funcs{}, append(objs, cm)...)
}

// servingClusterSeenServing is servingCluster after one reconcile that saw
// its leader serving, with the events of that reconcile drained.
func servingClusterSeenServing(t *testing.T, g *WithT) *unitEnv {
	t.Helper()
	e := servingCluster(t)
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.condition(t, dbv1.ConditionAvailable).Reason).To(Equal(ReasonLeaderServing))
	e.events()
	return e
}

func TestRolloutNeverTrustsAStaleCacheAboutTheRestartedPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := servingCluster(t)
	_, err := e.reconcile(t) // makes the StatefulSet
	g.Expect(err).NotTo(HaveOccurred())
	sts := &appsv1.StatefulSet{}
	g.Expect(e.c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "db"}, sts)).To(Succeed())
	sts.Status.UpdateRevision, sts.Status.ObservedGeneration = "r2", sts.Generation
	g.Expect(e.c.Status().Update(ctx, sts)).To(Succeed())

	exists := func(id int32) bool {
		return e.c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: specs.PodName(e.db, id)}, &corev1.Pod{}) == nil
	}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exists(3)).To(BeFalse(), "the highest follower restarts first")

	// The cache still shows the deleted pod, ready (same UID): wait.
	stale := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-3", Namespace: "ns", UID: "uid-3",
		Labels: map[string]string{specs.LabelName: specs.AppName, specs.LabelInstance: "db", appsv1.ControllerRevisionHashLabelKey: "r1"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	g.Expect(e.c.Create(ctx, stale)).To(Succeed())
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exists(2)).To(BeTrue(), "no second member goes down while the first may still be restarting")
	g.Expect(e.condition(t, dbv1.ConditionProgressing).Message).To(ContainSubstring("waiting for db-3 to come back"))

	// The replacement (a new UID, the new revision) is ready: go on.
	g.Expect(e.c.Delete(ctx, stale)).To(Succeed())
	fresh := stale.DeepCopy()
	fresh.ResourceVersion, fresh.UID = "", "uid-3b"
	fresh.Labels[appsv1.ControllerRevisionHashLabelKey] = "r2"
	g.Expect(e.c.Create(ctx, fresh)).To(Succeed())
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exists(2)).To(BeFalse())
	g.Expect(exists(1)).To(BeTrue(), "the leader goes last")
}

func TestPhaseFollowsTheFindings(t *testing.T) {
	c := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: dbv1.RolisClusterSpec{Replicas: 3}}
	serving := leadership.Assessment{State: leadership.Serving, Reason: "db-1 leads epoch 1"}
	cases := []struct {
		name string
		set  func(s *state)
		want dbv1.ClusterPhase
	}{
		{"nothing made yet", func(s *state) {}, dbv1.PhasePending},
		{"serving and settled", func(s *state) { s.probed, s.assessment, s.replicas = true, serving, 3 }, dbv1.PhaseRunning},
		{"failing over wins over everything", func(s *state) {
			s.probed, s.failingOver = true, &finding{"LeaderUnhealthy", "x"}
			s.problem("NoQuorum", "y")
		}, dbv1.PhaseFailingOver},
		{"degraded", func(s *state) { s.probed, s.assessment = true, serving; s.problem("X", "y") }, dbv1.PhaseDegraded},
		{"scaling", func(s *state) { s.probed, s.assessment = true, serving; s.progressing(ReasonScaling, "3→5") }, dbv1.PhaseScaling},
		{"rolling", func(s *state) { s.probed, s.assessment = true, serving; s.progressing(ReasonRollingRestart, "x") }, dbv1.PhaseUpgrading},
		{"electing", func(s *state) { s.probed = true; s.progressing(ReasonElecting, "x") }, dbv1.PhaseCreating},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newState(c.DeepCopy(), &memory{})
			tc.set(s)
			if tc.name == "serving and settled" || tc.name == "nothing made yet" {
				s.cluster.Status.ReadyReplicas = 3
			}
			computeStatus(s)
			NewWithT(t).Expect(s.cluster.Status.Phase).To(Equal(tc.want))
		})
	}
}

func TestConditionsCarryTheFirstReasonAndEveryMessage(t *testing.T) {
	g := NewWithT(t)
	s := newState(&dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Generation: 7}}, &memory{})
	s.problem("A", "first")
	s.problem("B", "second")
	s.problem("B", "second")
	computeStatus(s)
	cond := meta.FindStatusCondition(s.cluster.Status.Conditions, dbv1.ConditionDegraded)
	g.Expect(cond.Reason).To(Equal("A"))
	g.Expect(cond.Message).To(Equal("first; second"))
	g.Expect(cond.ObservedGeneration).To(Equal(int64(7)))
	g.Expect(meta.FindStatusCondition(s.cluster.Status.Conditions, dbv1.ConditionAvailable).Status).
		To(Equal(metav1.ConditionUnknown), "leadership conditions are unknown until the members are probed")
	g.Expect(s.cluster.Status.ObservedGeneration).To(Equal(int64(7)))
}

func TestPodsMapToTheirCluster(t *testing.T) {
	g := NewWithT(t)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-1", Labels: map[string]string{
		specs.LabelName: specs.AppName, specs.LabelInstance: "db", specs.LabelManagedBy: specs.ManagedBy}}}
	g.Expect(podToCluster(context.Background(), p)).To(Equal([]reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "db"}}}))
	p.Labels[specs.LabelManagedBy] = "someone-else"
	g.Expect(podToCluster(context.Background(), p)).To(BeEmpty())
}

func TestPodOutdatedOnlyOnceTheStatefulSetControllerCaughtUp(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: "r1"}}}
	g.Expect(podOutdated(sts, p)).To(BeFalse(), "no update revision yet")
	sts.Status.UpdateRevision, sts.Status.ObservedGeneration = "r2", 1
	g.Expect(podOutdated(sts, p)).To(BeFalse(), "the revision is of an older spec")
	sts.Status.ObservedGeneration = 2
	g.Expect(podOutdated(sts, p)).To(BeTrue())
	p.Labels[appsv1.ControllerRevisionHashLabelKey] = "r2"
	g.Expect(podOutdated(sts, p)).To(BeFalse())
}

// A membership change is decided by the leader within its epoch (rolisd's
// control stream); the stored record follows it, and only forwards.
func TestTheStoredRecordFollowsTheLeadersMembershipChange(t *testing.T) {
	g := NewWithT(t)
	e := servingCluster(t)
	four := []*rolisv1.Member{{Id: 1, Address: "a:1"}, {Id: 2, Address: "b:1"}, {Id: 3, Address: "c:1"}, {Id: 4, Address: "d:1"}}
	e.dialer[1].status.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1, Config: 1, Members: four}
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	store := &leadership.ConfigMapStore{Reader: e.c, Writer: e.c, Key: types.NamespacedName{Namespace: "ns", Name: "db-epoch"}}
	got, err := store.Load(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Record.GetEpoch()).To(Equal(uint64(1)))
	g.Expect(got.Record.GetConfig()).To(Equal(uint64(1)))
	g.Expect(leadership.MemberIDs(got.Record.GetMembers())).To(Equal([]int32{1, 2, 3, 4}))
	g.Expect(e.rec.Events).To(Receive(ContainSubstring(ReasonConfiguration)))

	// A follower that still reports configuration 0 changes nothing.
	e.dialer[1].status.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := store.Load(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Record.GetConfig()).To(Equal(uint64(1)))
	g.Expect(again.Version).To(Equal(got.Version))
}

// events drains the recorder.
func (e *unitEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// A leader that answers but does not lead is a suspicion (it may recover)
// unless it restarted: a smaller uptime than when it was seen serving, or
// another container id from the kubelet, means a new process, which never
// leads its old epoch again, so the operator fails over without waiting
// failover.timeout.
func TestALeaderThatRestartedIsFailedOverAtOnceAndOneThatStoppedLeadingWaitsTheTimeout(t *testing.T) {
	for _, how := range []string{"not restarted", "smaller uptime", "new container"} {
		t.Run(how, func(t *testing.T) {
			g := NewWithT(t)
			e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{})
			now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
			e.r.Now = func() time.Time { return now }
			container := func(id string) {
				p := &corev1.Pod{}
				g.Expect(e.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: "db-1"}, p)).To(Succeed())
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: specs.ContainerRun, ContainerID: id,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				g.Expect(e.c.Status().Update(context.Background(), p)).To(Succeed())
			}
			container("containerd://c1")
			_, err := e.reconcile(t) // elects member 1 (equal watermarks: lowest id)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.dialer[1].calls["PrepareFailover"]).To(Equal(1))
			for id, a := range e.dialer {
				a.status.Epoch, a.status.LeaderId, a.status.UptimeSeconds = 1, 1, 100
				a.status.Decided = &rolisv1.EpochRecord{Epoch: 1, LeaderId: 1}
				if id == 1 {
					a.status.Role = rolisv1.Role_LEADER
				}
			}
			_, err = e.reconcile(t)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.condition(t, dbv1.ConditionAvailable).Reason).To(Equal(ReasonLeaderServing))
			e.events()

			leader := e.dialer[1].status
			leader.Role = rolisv1.Role_FOLLOWER // answers, does not lead
			want := ""
			switch how {
			case "smaller uptime":
				leader.Role, leader.UptimeSeconds = rolisv1.Role_CATCHING_UP, 2
				want = "restarted (up 2 s, was up 100 s)"
			case "new container":
				container("containerd://c2")
				want = "restarted (container containerd://c2, was containerd://c1)"
			}
			now = now.Add(time.Second) // well within failover.timeout (3 s)
			_, err = e.reconcile(t)
			g.Expect(err).NotTo(HaveOccurred())
			prepared := e.dialer[2].calls["PrepareFailover"] + e.dialer[3].calls["PrepareFailover"]
			evs := e.events()
			if want != "" {
				g.Expect(prepared).To(Equal(1), "failed over at once")
				g.Expect(evs).To(ContainElement(And(ContainSubstring(ReasonLeaderGone), ContainSubstring(want))))
				return
			}
			g.Expect(prepared).To(BeZero(), "a leader that stopped leading may come back: wait failover.timeout")
			g.Expect(evs).To(ContainElement(ContainSubstring(ReasonLeaderUnhealthy)))
			g.Expect(evs).NotTo(ContainElement(ContainSubstring(ReasonLeaderGone)))
			now = now.Add(3 * time.Second)
			_, err = e.reconcile(t)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.dialer[2].calls["PrepareFailover"]+e.dialer[3].calls["PrepareFailover"]).To(Equal(1), "after the timeout")
		})
	}
}

// An OpenEpoch that does not say "open" in time leaves a decided record
// whose candidate goes on opening: not a failed promotion (no backoff, no
// PromotionFailed), but LeaderOpening and the same record asked for again
// soon.
func TestAnOpenThatIsStillInProgressIsAskedAgainWithoutBackoff(t *testing.T) {
	g := NewWithT(t)
	e := newUnitEnv(t, 3, followers(3), interceptor.Funcs{})
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	e.r.Now = func() time.Time { return now }
	e.dialer[1].openErr = status.Error(codes.Unavailable, "the re-proposals of epoch 1 are not on a majority yet")
	res, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.dialer[1].calls["OpenEpoch"]).To(Equal(1))
	g.Expect(res.RequeueAfter).To(BeNumerically("<=", time.Second), "looks again soon")
	evs := e.events()
	g.Expect(evs).To(ContainElement(ContainSubstring(ReasonLeaderOpening)))
	g.Expect(evs).NotTo(ContainElement(ContainSubstring(ReasonPromotionFailed)))
	mem := e.r.memoryOf(client.ObjectKeyFromObject(e.db))
	g.Expect(mem.promotion.notBefore.IsZero()).To(BeTrue(), "no backoff")

	// The candidate reports the promise of the decided epoch: the next pass
	// opens the same record on it, deciding nothing new.
	e.dialer[1].status.Role, e.dialer[1].status.PromisedEpoch = rolisv1.Role_CANDIDATE, 1
	e.dialer[1].openErr = nil
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.dialer[1].calls["OpenEpoch"]).To(Equal(2))
	g.Expect(e.dialer[1].calls["PrepareFailover"]).To(Equal(1), "the record is final: no new decision")
}

// The kubelet's SIGTERM stops the leader's admin API as soon as its pod is
// deleted; a reconcile whose cache does not show the deletion yet must not
// take it for a suspicion (a LeaderUnhealthy warning, failover.timeout of
// waiting): the operator reads the pod itself before calling the leader
// unhealthy.
func TestALeaderWhosePodTheCacheDoesNotShowDeletedYetIsSwitchedOverAtOnce(t *testing.T) {
	g := NewWithT(t)
	e := servingClusterSeenServing(t, g)

	e.dialer[1].statusErr = status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	deleted := metav1.NewTime(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	e.r.APIReader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if p, ok := obj.(*corev1.Pod); ok && p.Name == "db-1" {
				p.DeletionTimestamp = &deleted // what the API server knows and the cache does not yet
			}
			return nil
		},
	})
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	evs := e.events()
	g.Expect(evs).To(ContainElement(And(ContainSubstring(ReasonLeaderLeaving), ContainSubstring("db-1 is being deleted"))))
	g.Expect(evs).NotTo(ContainElement(ContainSubstring(ReasonLeaderUnhealthy)))
	g.Expect(e.dialer[2].calls["PrepareFailover"]+e.dialer[3].calls["PrepareFailover"]).To(Equal(1), "switched over at once")
}

// One probe that misses the serving leader's answer (a loaded node, a slow
// new connection) is not yet a suspicion: the operator asks again before
// it warns and starts counting failover.timeout. Two misses in a row are.
func TestALeaderThatMissesOneProbeIsAskedAgainBeforeItIsSuspected(t *testing.T) {
	g := NewWithT(t)
	e := servingClusterSeenServing(t, g)

	late := status.Error(codes.DeadlineExceeded, "context deadline exceeded")
	e.dialer[1].missed = []error{late}
	before := e.dialer[1].calls["Status"]
	_, err := e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.dialer[1].calls["Status"]-before).To(Equal(2), "asked again")
	g.Expect(e.events()).NotTo(ContainElement(ContainSubstring(ReasonLeaderUnhealthy)))
	g.Expect(e.condition(t, dbv1.ConditionAvailable).Reason).To(Equal(ReasonLeaderServing))
	cur := &dbv1.RolisCluster{}
	g.Expect(e.c.Get(context.Background(), client.ObjectKeyFromObject(e.db), cur)).To(Succeed())
	g.Expect(cur.Status.Members[0].Role).To(Equal("Leader"), "the status shows the second answer")

	e.dialer[1].missed = []error{late, late}
	_, err = e.reconcile(t)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.events()).To(ContainElement(And(ContainSubstring(ReasonLeaderUnhealthy), ContainSubstring("deadline exceeded"))))
	g.Expect(e.dialer[2].calls["PrepareFailover"]+e.dialer[3].calls["PrepareFailover"]).To(BeZero(), "a suspicion waits failover.timeout")
}
