/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

func TestHeldExpression(t *testing.T) {
	many := make([]string, MaxCoveredNamespaces+1)
	for i := range many {
		many[i] = fmt.Sprintf("ns-%d", i)
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		everything bool
		want       string
	}{
		{name: "nothing held: never called", want: "false"},
		{name: "the namespaces held", namespaces: []string{"shop", "web"}, want: `request.namespace in ["shop", "web"]`},
		{name: "past the bound: every pod", namespaces: many, want: "true"},
		{name: "an earlier leader's every pod, kept", namespaces: []string{"shop"}, everything: true, want: "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HeldExpression(tc.namespaces, tc.everything)
			if got != tc.want {
				t.Fatalf("HeldExpression = %s, want %s", got, tc.want)
			}
			back, all := HeldNamespaces([]admissionregistrationv1.MatchCondition{{Name: "installer's", Expression: `request.namespace in ["x"]`}, {Name: HeldNamespacesCondition, Expression: got}})
			if all != (got == "true") || (!all && !slices.Equal(back, tc.namespaces)) {
				t.Errorf("HeldNamespaces read back %v (all %v), want %v", back, all, tc.namespaces)
			}
		})
	}
	if ns, all := HeldNamespaces(nil); ns != nil || all {
		t.Errorf("without the entry (a fresh install): %v, %v, want nothing", ns, all)
	}
}

// coverageFixture is a Coverage over a fake API server holding the in-use
// webhook's configuration and, served, a policy guarding Secrets with key.
type coverageFixture struct {
	*Coverage
	client client.Client
	now    time.Time
	woken  []queuekey.Request
}

const coverKey = "teardown.dev/creds"

func newCoverageFixture(t *testing.T, objs ...client.Object) *coverageFixture {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: InUseConfiguration},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: InUseWebhookName,
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "installer", Expression: "true"}}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(append(objs, cfg)...).Build()
	pol, err := policy.FromObject(&teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", UID: "pol-uid", Generation: 1},
		Spec: teardownv1alpha1.TeardownPolicySpec{Finalizer: coverKey,
			Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Secret", Selector: &metav1.LabelSelector{}}},
			Steps:   []teardownv1alpha1.Step{{Name: "unused", Unused: &teardownv1alpha1.UnusedAction{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	index := policy.NewIndex()
	index.Set(&policy.Served{Policy: pol, Keys: []policy.ServedKey{{Key: pol.Key, Kinds: pol.Kinds()}}})
	f := &coverageFixture{client: c, now: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}
	f.Coverage = NewCoverage(c, c, index, InUseConfiguration, func(_ context.Context, reqs ...queuekey.Request) {
		f.woken = append(f.woken, reqs...)
	})
	f.Now = func() time.Time { return f.now }
	f.started = f.now
	return f
}

func (f *coverageFixture) condition(t *testing.T) string {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.client.Get(t.Context(), client.ObjectKey{Name: InUseConfiguration}, cfg); err != nil {
		t.Fatal(err)
	}
	conds := cfg.Webhooks[0].MatchConditions
	if conds[0].Name != "installer" {
		t.Errorf("the installer's condition was not kept: %v", conds)
	}
	for _, c := range conds {
		if c.Name == HeldNamespacesCondition {
			return c.Expression
		}
	}
	return ""
}

func secretReq(ns, name string) queuekey.Request {
	return queuekey.For(corev1.SchemeGroupVersion.WithKind("Secret"), types.NamespacedName{Namespace: ns, Name: name})
}

// TestCoverage: a namespace an unused step asks for is written into the
// condition and counts as covered only from then on, its cleanup woken;
// nothing asked for writes "false"; a namespace leaves only once nothing is
// being deleted there under a served key, and not in the first moments of
// a leader (an earlier leader's namespaces are kept).
func TestCoverage(t *testing.T) {
	deleting := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "shop", Finalizers: []string{coverKey},
		DeletionTimestamp: &metav1.Time{Time: time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)}}}
	f := newCoverageFixture(t, deleting)
	ctx := t.Context()

	if err := f.sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := f.condition(t); got != "false" {
		t.Errorf("nothing held: the condition is %q, want false", got)
	}

	for _, ns := range []string{"shop", "web"} {
		if since, err := f.Cover(ns, secretReq(ns, "creds")); !since.IsZero() || err != nil {
			t.Fatalf("before the configuration names %s: covered since %v (%v), want not yet", ns, since, err)
		}
	}
	f.now = f.now.Add(time.Second)
	if err := f.sync(ctx, false); err != nil {
		t.Fatal(err)
	}
	if got, want := f.condition(t), `request.namespace in ["shop", "web"]`; got != want {
		t.Errorf("the condition is %q, want %q", got, want)
	}
	var woken []string
	for _, r := range f.woken {
		woken = append(woken, r.String())
	}
	if diff := cmp.Diff([]string{"Secret shop/creds", "Secret web/creds"}, woken); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	if since, _ := f.Cover("shop", secretReq("shop", "creds")); !since.Equal(f.now) {
		t.Errorf("shop covered since %v, want %v (the write)", since, f.now)
	}

	// Pruning waits PruneAfterStart, then drops web (nothing held there)
	// and keeps shop (its Secret is being deleted under a served key).
	if err := f.sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := f.condition(t); got != `request.namespace in ["shop", "web"]` {
		t.Errorf("pruned before PruneAfterStart: %q", got)
	}
	f.now = f.now.Add(f.PruneAfterStart)
	if err := f.sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got, want := f.condition(t), `request.namespace in ["shop"]`; got != want {
		t.Errorf("after pruning, the condition is %q, want %q", got, want)
	}

	// The held Secret goes: shop goes too.
	if err := f.client.Get(ctx, client.ObjectKeyFromObject(deleting), deleting); err != nil {
		t.Fatal(err)
	}
	deleting.Finalizers = nil
	if err := f.client.Update(ctx, deleting); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := f.condition(t); got != "false" {
		t.Errorf("with nothing held, the condition is %q, want false", got)
	}
}

// TestCoverageNewLeaderKeeps: a new leader reads the namespaces the
// configuration names and keeps them (covered from its read) until it may
// prune.
func TestCoverageNewLeaderKeeps(t *testing.T) {
	f := newCoverageFixture(t)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := f.client.Get(t.Context(), client.ObjectKey{Name: InUseConfiguration}, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Webhooks[0].MatchConditions = append(cfg.Webhooks[0].MatchConditions,
		admissionregistrationv1.MatchCondition{Name: HeldNamespacesCondition, Expression: HeldExpression([]string{"shop"}, false)})
	if err := f.client.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := f.condition(t); got != `request.namespace in ["shop"]` {
		t.Errorf("a new leader narrowed the condition to %q at once", got)
	}
	if since, _ := f.Cover("shop", secretReq("shop", "creds")); !since.Equal(f.now) {
		t.Errorf("shop covered since %v, want the read, %v", since, f.now)
	}
}

// TestCoverageGone: without its configuration, nothing counts as covered
// and Cover says why.
func TestCoverageGone(t *testing.T) {
	f := newCoverageFixture(t)
	if _, err := f.Cover("shop", secretReq("shop", "creds")); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Delete(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: InUseConfiguration}}); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(t.Context(), false); err == nil {
		t.Fatal("sync without the configuration: no error")
	}
	since, err := f.Cover("shop", secretReq("shop", "creds"))
	if !since.IsZero() || err == nil {
		t.Errorf("without the configuration: covered since %v, error %v; want not covered, with the error", since, err)
	}
}

// askingCache is a cache of guarded objects that shows none, and during
// the list a step asks for the namespace: what happens when an object is
// deleted while pruning checks its namespace and its step runs before the
// cache shows the deletion to the check.
type askingCache struct {
	client.Reader
	ask func()
}

func (a askingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	a.ask()
	return a.Reader.List(ctx, list, opts...)
}

// TestCoveragePruneKeepsWhatIsAskedForMeanwhile: a namespace asked for while
// pruning checked it is kept, although the check found nothing held.
func TestCoveragePruneKeepsWhatIsAskedForMeanwhile(t *testing.T) {
	f := newCoverageFixture(t)
	if _, err := f.Cover("shop", secretReq("shop", "creds")); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	f.Cache = askingCache{Reader: f.client, ask: func() { _, _ = f.Cover("shop", secretReq("shop", "creds")) }}
	f.now = f.now.Add(f.PruneAfterStart)
	if err := f.sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got, want := f.condition(t), `request.namespace in ["shop"]`; got != want {
		t.Errorf("after pruning while a step asked for shop, the condition is %q, want %q", got, want)
	}
	f.Cache = f.client
	if err := f.sync(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	if got := f.condition(t); got != "false" {
		t.Errorf("pruned when nothing asked meanwhile: the condition is %q, want false", got)
	}
}
