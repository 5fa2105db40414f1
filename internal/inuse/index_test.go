/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package inuse

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// newTestIndex is an index over stores the test fills, as the informers
// would, already synced.
func newTestIndex() (*Index, *[]Waiter) {
	var mu sync.Mutex
	woken := &[]Waiter{}
	x := New(nil, func(_ context.Context, w Waiter) {
		mu.Lock()
		defer mu.Unlock()
		*woken = append(*woken, w)
	})
	x.stores = newStores()
	x.synced.Store(true)
	return x, woken
}

func pod(ns, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:   corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestPodOf(t *testing.T) {
	cases := []struct {
		name string
		pod  *corev1.Pod
		want *Pod
	}{
		{
			name: "nothing referenced runs as default",
			pod:  pod("a", "p", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "" }),
			want: &Pod{Namespace: "a", Name: "p", ResourceVersion: "1", ServiceAccount: "default"},
		},
		{
			name: "deprecated serviceAccount field",
			pod:  pod("a", "p", func(p *corev1.Pod) { p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "", "old" }),
			want: &Pod{Namespace: "a", Name: "p", ResourceVersion: "1", ServiceAccount: "old"},
		},
		{
			name: "every reference",
			pod: pod("a", "p", func(p *corev1.Pod) {
				p.Spec.ServiceAccountName = "agent"
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "not-controller"}, {Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}, {Name: ""}}
				p.Spec.Volumes = []corev1.Volume{
					{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret", Optional: ptr.To(true)}}},
					{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
					{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					}}}},
					{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
					{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				}
				p.Spec.InitContainers = []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-cm"}}}}}}
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: "A", Value: "x"},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
					{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}, Key: "k"}}},
					{Name: "D", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				}
				p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "debug-secret"}}}}}}}
			}),
			want: &Pod{Namespace: "a", Name: "p", ResourceVersion: "1", ServiceAccount: "agent", OwnerKind: "DaemonSet", OwnerName: "ds",
				Secrets:    []string{"csi-secret", "debug-secret", "env-secret", "proj-secret", "pull", "vol-secret"},
				ConfigMaps: []string{"init-cm", "kube-root-ca.crt", "vol-cm"}},
		},
		{
			name: "finished",
			pod:  pod("a", "p", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			want: &Pod{Namespace: "a", Name: "p", ResourceVersion: "1", ServiceAccount: "default", Finished: true},
		},
		{
			name: "finished and being deleted",
			pod: pod("a", "p", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodFailed
				p.DeletionTimestamp = &metav1.Time{}
			}),
			want: &Pod{Namespace: "a", Name: "p", ResourceVersion: "1", ServiceAccount: "default", Finished: true, Deleting: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodOf(tc.pod)); diff != "" {
				t.Errorf("PodOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubjectKey(t *testing.T) {
	cases := []struct {
		ns      string
		subject rbacv1.Subject
		want    string
	}{
		{"a", rbacv1.Subject{Kind: "ServiceAccount", Name: "sa"}, "ServiceAccount/a/sa"},
		{"a", rbacv1.Subject{Kind: "ServiceAccount", Namespace: "b", Name: "sa"}, "ServiceAccount/b/sa"},
		{"", rbacv1.Subject{Kind: "ServiceAccount", Name: "sa"}, ""},
		{"", rbacv1.Subject{Kind: "User", Name: "system:serviceaccount:b:sa"}, "ServiceAccount/b/sa"},
		{"", rbacv1.Subject{Kind: "User", Name: "system:serviceaccount:b"}, ""},
		{"", rbacv1.Subject{Kind: "User", Name: "system:serviceaccount:b:sa:x"}, ""},
		{"", rbacv1.Subject{Kind: "User", Name: "alice"}, ""},
		{"", rbacv1.Subject{Kind: "Group", Name: "system:serviceaccounts"}, "pods"},
		{"", rbacv1.Subject{Kind: "Group", Name: "system:serviceaccounts:b"}, "pods-in/b"},
		{"", rbacv1.Subject{Kind: "Group", Name: "system:serviceaccounts:"}, ""},
		{"", rbacv1.Subject{Kind: "Group", Name: "system:authenticated"}, ""},
		{"", rbacv1.Subject{Kind: "Group", Name: "system:masters"}, ""},
	}
	for _, tc := range cases {
		if got := subjectKey(tc.ns, tc.subject); got != tc.want {
			t.Errorf("subjectKey(%q, %+v) = %q, want %q", tc.ns, tc.subject, got, tc.want)
		}
	}
}

var (
	saGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
	crGVK  = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
	crbGVK = schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}
)

func waiter(gvk schema.GroupVersionKind, ns, name string) Waiter {
	w := Waiter{GVK: gvk}
	w.Key.Namespace, w.Key.Name = ns, name
	return w
}

func addPod(t *testing.T, x *Index, p *corev1.Pod) *Pod {
	t.Helper()
	rec := PodOf(p)
	if err := x.pods.Add(rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func names(use *Use) []string {
	var out []string
	for _, p := range use.Pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestCheck(t *testing.T) {
	x, _ := newTestIndex()
	addPod(t, x, pod("agents", "agent-0", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "agent"
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}}}
	}))
	addPod(t, x, pod("agents", "agent-1", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "agent"
		p.DeletionTimestamp = &metav1.Time{}
		p.Status.Phase = corev1.PodSucceeded
	}))
	addPod(t, x, pod("agents", "done", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "agent"
		p.Status.Phase = corev1.PodFailed
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "finished-only"}}}}
	}))
	addPod(t, x, pod("other", "web", nil))
	add := func(store cache.Indexer, b *Binding) {
		if err := store.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	add(x.clusterRoleBindings, ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "agent"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "agents", Name: "agent"}}}))
	add(x.clusterRoleBindings, ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everyone"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view-all"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts"}, {Kind: "Group", Name: "system:authenticated"}}}))
	add(x.clusterRoleBindings, ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "authenticated"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "basic"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}}}))
	add(x.roleBindings, BindingOf(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "web"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "system:serviceaccount:other:default"}, {Kind: "ServiceAccount", Namespace: "agents", Name: "agent"}}}))
	add(x.roleBindings, BindingOf(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "ns-group"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "agent"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts:other"}}}))
	// Aggregation: "addon" is aggregated into "edit-extra", itself
	// aggregated into "edit-all", which other/web's ServiceAccount is bound
	// to; "selects-nothing" has an aggregationRule matching no label here.
	for _, cr := range []*rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "addon", Labels: map[string]string{"aggregate-to-edit-extra": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "edit-extra", Labels: map[string]string{"aggregate-to-edit-all": "true"}},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"aggregate-to-edit-extra": "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "edit-all"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"unrelated": "x"}}, {MatchLabels: map[string]string{"aggregate-to-edit-all": "true"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "selects-nothing"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"nothing": "here"}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "lone", Labels: map[string]string{"nothing": "there"}}},
	} {
		if err := x.clusterRoles.Add(ClusterRoleOf(cr)); err != nil {
			t.Fatal(err)
		}
	}
	add(x.clusterRoleBindings, ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "web-edit"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit-all"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "other", Name: "default"}}}))

	rbac := "rbac.authorization.k8s.io"
	cases := []struct {
		name          string
		kind          schema.GroupKind
		ns, obj       string
		scope         string
		want, through []string
	}{
		{"ServiceAccount: running and terminating pods, not the finished one", schema.GroupKind{Kind: "ServiceAccount"}, "agents", "agent", "", []string{"agents/agent-0", "agents/agent-1"}, nil},
		{"Secret in a volume", schema.GroupKind{Kind: "Secret"}, "agents", "creds", "", []string{"agents/agent-0"}, nil},
		{"Secret only a finished pod uses", schema.GroupKind{Kind: "Secret"}, "agents", "finished-only", "", nil, nil},
		{"Secret nobody uses", schema.GroupKind{Kind: "Secret"}, "agents", "nothing", "", nil, nil},
		{"ConfigMap of the same name in another namespace", schema.GroupKind{Kind: "ConfigMap"}, "agents", "creds", "", nil, nil},
		{"ClusterRole through a ClusterRoleBinding and a RoleBinding's group", schema.GroupKind{Group: rbac, Kind: "ClusterRole"}, "", "agent", "",
			[]string{"agents/agent-0", "agents/agent-1", "other/web"}, []string{"ClusterRoleBinding agent", "RoleBinding other/ns-group"}},
		{"ClusterRoleBinding to its ServiceAccount", schema.GroupKind{Group: rbac, Kind: "ClusterRoleBinding"}, "", "agent", "", []string{"agents/agent-0", "agents/agent-1"}, nil},
		{"ClusterRoleBinding to every ServiceAccount", schema.GroupKind{Group: rbac, Kind: "ClusterRoleBinding"}, "", "everyone", "", []string{"agents/agent-0", "agents/agent-1", "other/web"}, nil},
		{"system:authenticated holds nothing", schema.GroupKind{Group: rbac, Kind: "ClusterRoleBinding"}, "", "authenticated", "", nil, nil},
		{"Role through a RoleBinding with a User subject and another namespace's ServiceAccount", schema.GroupKind{Group: rbac, Kind: "Role"}, "other", "web", "",
			[]string{"agents/agent-0", "agents/agent-1", "other/web"}, []string{"RoleBinding other/web"}},
		{"a TeardownPolicy sees only its namespace's pods", schema.GroupKind{Group: rbac, Kind: "Role"}, "other", "web", "other",
			[]string{"other/web"}, []string{"RoleBinding other/web"}},
		{"a TeardownPolicy's view of a RoleBinding to another namespace's ServiceAccount", schema.GroupKind{Group: rbac, Kind: "RoleBinding"}, "other", "web", "agents-not",
			nil, nil},
		{"a binding that is gone", schema.GroupKind{Group: rbac, Kind: "RoleBinding"}, "other", "gone", "", nil, nil},
		{"ClusterRole aggregated into one aggregated into a bound one", schema.GroupKind{Group: rbac, Kind: "ClusterRole"}, "", "addon", "",
			[]string{"other/web"}, []string{"ClusterRoleBinding web-edit to ClusterRole edit-all, which aggregates ClusterRole edit-extra"}},
		{"ClusterRole aggregated into a bound one", schema.GroupKind{Group: rbac, Kind: "ClusterRole"}, "", "edit-extra", "",
			[]string{"other/web"}, []string{"ClusterRoleBinding web-edit to ClusterRole edit-all, which aggregates it"}},
		{"the aggregating ClusterRole itself", schema.GroupKind{Group: rbac, Kind: "ClusterRole"}, "", "edit-all", "",
			[]string{"other/web"}, []string{"ClusterRoleBinding web-edit"}},
		{"a ClusterRole no aggregationRule selects", schema.GroupKind{Group: rbac, Kind: "ClusterRole"}, "", "lone", "", nil, nil},
	}
	// kubectl teardown plan's Snapshot of the same records answers the same.
	var pods []*Pod
	for _, obj := range x.pods.List() {
		pods = append(pods, obj.(*Pod))
	}
	var bindings []*Binding
	for _, obj := range append(x.roleBindings.List(), x.clusterRoleBindings.List()...) {
		bindings = append(bindings, obj.(*Binding))
	}
	var clusterRoles []*ClusterRole
	for _, obj := range x.clusterRoles.List() {
		clusterRoles = append(clusterRoles, obj.(*ClusterRole))
	}
	snap, err := NewSnapshot(pods, bindings, clusterRoles)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			use, err := x.Check(waiter(saGVK, tc.ns, tc.obj), tc.kind, tc.ns, tc.obj, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(use)); diff != "" {
				t.Errorf("users (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.through, use.Through); diff != "" {
				t.Errorf("through (-want +got):\n%s", diff)
			}
			snapUse, err := snap.Users(tc.kind, tc.ns, tc.obj, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(use, snapUse); diff != "" {
				t.Errorf("Snapshot.Users differs from Check (-check +snapshot):\n%s", diff)
			}
		})
	}
	if _, err := x.Check(waiter(saGVK, "a", "b"), schema.GroupKind{Group: "apps", Kind: "Deployment"}, "a", "b", ""); err == nil {
		t.Error("a Deployment was checked; want an error")
	}
}

// TestWake checks that a waiter is woken by the changes that can end a use,
// once, and not by those that cannot.
func TestWake(t *testing.T) {
	ctx := t.Context()
	x, woken := newTestIndex()
	p0 := pod("agents", "agent-0", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "agent" })
	rec0 := addPod(t, x, p0)
	w := waiter(saGVK, "agents", "agent")
	use, err := x.Check(w, schema.GroupKind{Kind: "ServiceAccount"}, "agents", "agent", "")
	if err != nil || len(use.Pods) != 1 {
		t.Fatalf("Check = %v, %v; want one user", use, err)
	}
	// A label change says nothing about use.
	relabelled := p0.DeepCopy()
	relabelled.Labels, relabelled.ResourceVersion = map[string]string{"x": "y"}, "2"
	x.podChanged(ctx, rec0, PodOf(relabelled))
	// A new pod frees nothing (podChanged is not called for additions).
	if len(*woken) != 0 {
		t.Fatalf("woken by a label change: %v", *woken)
	}
	deleting := relabelled.DeepCopy()
	deleting.DeletionTimestamp, deleting.ResourceVersion = &metav1.Time{}, "3"
	rec1 := PodOf(deleting)
	x.podChanged(ctx, PodOf(relabelled), rec1)
	if diff := cmp.Diff([]Waiter{w}, *woken); diff != "" {
		t.Fatalf("woken by the pod's deletion starting (-want +got):\n%s", diff)
	}
	if x.Waiting() != 0 {
		t.Fatalf("%d waiters still registered after the wake; want it forgotten", x.Waiting())
	}
	// The pending run registers again; the pod going wakes it again.
	if _, err := x.Check(w, schema.GroupKind{Kind: "ServiceAccount"}, "agents", "agent", ""); err != nil {
		t.Fatal(err)
	}
	if err := x.pods.Delete(rec1); err != nil {
		t.Fatal(err)
	}
	x.podChanged(ctx, cache.DeletedFinalStateUnknown{Key: "agents/agent-0", Obj: rec1}, nil)
	if len(*woken) != 2 {
		t.Fatalf("woken %d times; want twice", len(*woken))
	}
	// Unused now: nothing stays registered.
	use, err = x.Check(w, schema.GroupKind{Kind: "ServiceAccount"}, "agents", "agent", "")
	if err != nil || len(use.Pods) != 0 || x.Waiting() != 0 {
		t.Fatalf("Check = %v, %v with %d waiting; want unused, none waiting", use, err, x.Waiting())
	}

	// A ClusterRole waits on its bindings too: a new subject-less binding
	// wakes it.
	rec := addPod(t, x, pod("agents", "agent-2", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "agent" }))
	b := ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent", ResourceVersion: "1"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "agent"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "agents", Name: "agent"}}})
	if err := x.clusterRoleBindings.Add(b); err != nil {
		t.Fatal(err)
	}
	wr, wb := waiter(crGVK, "", "agent"), waiter(crbGVK, "", "agent")
	for _, c := range []struct {
		w    Waiter
		kind string
	}{{wr, "ClusterRole"}, {wb, "ClusterRoleBinding"}} {
		use, err := x.Check(c.w, schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: c.kind}, "", "agent", "")
		if err != nil || len(use.Pods) != 1 {
			t.Fatalf("Check %s = %v, %v; want one user", c.kind, use, err)
		}
	}
	*woken = nil
	edited := ClusterBindingOf(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent", ResourceVersion: "2"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "agent"}})
	x.bindingChanged(ctx, b, edited)
	slices.SortFunc(*woken, func(a, b Waiter) int { return len(a.GVK.Kind) - len(b.GVK.Kind) })
	if diff := cmp.Diff([]Waiter{wr, wb}, *woken); diff != "" {
		t.Fatalf("woken by the binding's edit (-want +got):\n%s", diff)
	}
	_ = rec

	// A ClusterRole used through one that aggregates it is woken when the
	// aggregating one stops selecting it, not when an unrelated
	// ClusterRole's rules change.
	source := ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon", Labels: map[string]string{"to-agent": "true"}}})
	aggregating := ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent", ResourceVersion: "1"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"to-agent": "true"}}}}})
	for _, r := range []*ClusterRole{source, aggregating} {
		if err := x.clusterRoles.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.clusterRoleBindings.Update(b); err != nil {
		t.Fatal(err)
	}
	wa := waiter(crGVK, "", "addon")
	if use, err := x.Check(wa, schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, "", "addon", ""); err != nil || len(use.Pods) != 1 {
		t.Fatalf("Check addon = %v, %v; want one user through agent", use, err)
	}
	*woken = nil
	rulesOnly := *aggregating
	rulesOnly.ResourceVersion = "2"
	x.clusterRoleChanged(ctx, aggregating, &rulesOnly)
	if len(*woken) != 0 {
		t.Fatalf("woken by a change that aggregates alike: %v", *woken)
	}
	stopped := ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agent", ResourceVersion: "3"}})
	x.clusterRoleChanged(ctx, &rulesOnly, stopped)
	if !slices.Contains(*woken, wa) {
		t.Fatalf("woken %v when agent stopped aggregating addon; want %v", *woken, wa)
	}
}

func TestNotSyncedWaitsForSync(t *testing.T) {
	x, woken := newTestIndex()
	x.synced.Store(false)
	w := waiter(saGVK, "a", "b")
	if _, err := x.Check(w, schema.GroupKind{Kind: "ServiceAccount"}, "a", "b", ""); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Check before sync = %v; want ErrNotSynced", err)
	}
	x.synced.Store(true)
	x.wakeKeys(t.Context(), syncedKey)
	if diff := cmp.Diff([]Waiter{w}, *woken); diff != "" {
		t.Fatalf("woken at sync (-want +got):\n%s", diff)
	}
}

// syntheticPod is a typical pod of a Deployment: its own ServiceAccount, the
// projected token volume every pod gets, a Secret and a ConfigMap.
func syntheticPod(i int) *corev1.Pod {
	ns := fmt.Sprintf("ns-%d", i%50)
	app := fmt.Sprintf("app-%d", i%500)
	return pod(ns, fmt.Sprintf("%s-7d9c8b6f5-%05d", app, i), func(p *corev1.Pod) {
		p.UID = "6f0c7d3a-1b2c-4d5e-8f90-a1b2c3d4e5f6"
		p.ResourceVersion = fmt.Sprintf("%d", 100000+i)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9c8b6f5", Controller: ptr.To(true)}}
		p.Spec.ServiceAccountName = app
		p.Spec.Volumes = []corev1.Volume{
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: app + "-creds"}}},
		}
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: app + "-config"}}}}
	})
}

// TestMemoryPerPod measures what the index keeps per pod: the record, the
// store's entry and the reverse index entries, for 10,000 typical pods.
func TestMemoryPerPod(t *testing.T) {
	const n = 10000
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = syntheticPod(i)
	}
	x, _ := newTestIndex()
	before := heapInUse()
	for _, p := range pods {
		if err := x.pods.Add(PodOf(p)); err != nil {
			t.Fatal(err)
		}
	}
	after := heapInUse()
	perPod := float64(after-before) / n
	t.Logf("the index keeps %.0f bytes per pod (%d pods, %d KiB)", perPod, n, (after-before)/1024)
	if perPod > 1024 {
		t.Errorf("%.0f bytes per pod; want at most 1 KiB", perPod)
	}
	// A lookup costs the users, not the pods.
	use, err := x.Check(waiter(saGVK, "ns-1", "app-1"), schema.GroupKind{Kind: "ServiceAccount"}, "ns-1", "app-1", "")
	if err != nil || len(use.Pods) != n/500 {
		t.Fatalf("Check = %d users, %v; want %d", len(use.Pods), err, n/500)
	}
	runtime.KeepAlive(pods)
	runtime.KeepAlive(x)
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkCheck looks up the users of one ServiceAccount among 10,000 pods.
func BenchmarkCheck(b *testing.B) {
	x, _ := newTestIndex()
	for i := range 10000 {
		if err := x.pods.Add(PodOf(syntheticPod(i))); err != nil {
			b.Fatal(err)
		}
	}
	w := waiter(saGVK, "ns-1", "app-1")
	for b.Loop() {
		if _, err := x.Check(w, schema.GroupKind{Kind: "ServiceAccount"}, "ns-1", "app-1", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecheck: the safety net wakes a waiter nothing else woke, once; a
// waiter woken or forgotten before it fires is not woken again.
func TestRecheck(t *testing.T) {
	x, woken := newTestIndex()
	var mu sync.Mutex
	x.wake = func(_ context.Context, w Waiter) {
		mu.Lock()
		defer mu.Unlock()
		*woken = append(*woken, w)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(*woken)
	}
	fired, forgotten, wokenFirst := waiter(saGVK, "a", "fired"), waiter(saGVK, "a", "forgotten"), waiter(saGVK, "a", "woken")
	x.hold(wokenFirst, "k")
	for _, w := range []Waiter{fired, forgotten, wokenFirst} {
		x.Recheck(w, 50*time.Millisecond)
	}
	x.Forget(forgotten)
	x.wakeKeys(t.Context(), "k")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	got := slices.Clone(*woken)
	mu.Unlock()
	if diff := cmp.Diff([]Waiter{wokenFirst, fired}, got); diff != "" {
		t.Errorf("woken (-want +got):\n%s", diff)
	}
	if x.Waiting() != 0 || count() != 2 {
		t.Errorf("%d still registered, %d wakes; want none registered, 2 wakes", x.Waiting(), count())
	}
}

// TestAggregatorSelectors: what an aggregationRule selects, as the
// aggregation controller would aggregate it.
func TestAggregatorSelectors(t *testing.T) {
	labelled := ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon", Labels: map[string]string{"to-admin": "true"}}})
	bare := ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	rule := func(sel ...metav1.LabelSelector) *ClusterRole {
		return ClusterRoleOf(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: sel}})
	}
	for _, tc := range []struct {
		name              string
		aggregator        *ClusterRole
		labelled, unknown bool
	}{
		{"matchLabels", rule(metav1.LabelSelector{MatchLabels: map[string]string{"to-admin": "true"}}), true, false},
		{"one of two selectors", rule(metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}, metav1.LabelSelector{MatchLabels: map[string]string{"to-admin": "true"}}), true, false},
		{"an empty selector selects every ClusterRole", rule(metav1.LabelSelector{}), true, true},
		{"an invalid selector selects none", rule(metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "to-admin", Operator: "Bogus"}}}), false, false},
		{"no aggregationRule", bare, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.aggregator.selects(labelled); got != tc.labelled {
				t.Errorf("selects the labelled ClusterRole = %v, want %v", got, tc.labelled)
			}
			if got := tc.aggregator.selects(bare); got != tc.unknown {
				t.Errorf("selects a ClusterRole without labels = %v, want %v", got, tc.unknown)
			}
		})
	}
}
