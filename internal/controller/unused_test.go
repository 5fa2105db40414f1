/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

func unusedStep() teardownv1alpha1.Step {
	return teardownv1alpha1.Step{Name: "pods-gone", Unused: &teardownv1alpha1.UnusedAction{}}
}

// serveUnusedPolicy creates a ClusterTeardownPolicy named name whose one
// step is unusedStep, deleted at the end of the test, and waits until it is
// served.
func serveUnusedPolicy(t *testing.T, name string, targets ...teardownv1alpha1.Target) *teardownv1alpha1.ClusterTeardownPolicy {
	t.Helper()
	pol := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Targets: targets, Steps: []teardownv1alpha1.Step{unusedStep()}},
	}
	create(t, pol)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	mustBeReady(t, pol)
	return pol
}

// agentPod is a pod of ds as the DaemonSet controller would create it,
// held Terminating by kubeletHold after its deletion as a kubelet's
// graceful shutdown would hold it.
func agentPod(ds *appsv1.DaemonSet, name string, spec corev1.PodSpec) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels, Finalizers: []string{kubeletHold},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: spec,
	}
}

// releasePod removes kubeletHold, as a kubelet ends a graceful shutdown: the
// pod is gone when the call returns.
func releasePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))
	if err := k8s.Patch(t.Context(), p, patch); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, p.Name+" gone", testenv.Gone(k8s, p))
}

// present lists which of objs still exist.
func present(ctx context.Context, objs ...client.Object) ([]string, error) {
	var out []string
	for _, o := range objs {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("%T %s", o, o.GetName()))
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return out, nil
}

// goneWithin waits until every obj is gone and returns how long that took.
func goneWithin(t *testing.T, timeout time.Duration, what string, objs ...client.Object) time.Duration {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for {
		left, err := present(ctx, objs...)
		if err != nil {
			t.Fatalf("waiting for %s to go: %v", what, err)
		}
		if len(left) == 0 {
			return time.Since(start)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s still there after %s: %v", what, timeout, left)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// allStay fails unless every obj exists and is being deleted.
func allStay(t *testing.T, why string, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		got := o.DeepCopyObject().(client.Object)
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatalf("%T %s went while %s: %v", o, o.GetName(), why, err)
		}
		if got.GetDeletionTimestamp() == nil {
			t.Fatalf("%T %s is not being deleted", o, o.GetName())
		}
	}
}

// mayGetNodes asks the authorizer whether ServiceAccount ns/name may do what
// the agent's ClusterRole grants.
func mayGetNodes(t *testing.T, ns, name string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + name,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Version: "v1"},
	}}
	if err := k8s.Create(t.Context(), review); err != nil {
		t.Fatal(err)
	}
	if !review.Status.Allowed {
		t.Fatalf("the agent's ServiceAccount may no longer get nodes while its pods run: %s", review.Status.Reason)
	}
}

// blockedMessage waits until the policy reports obj blocked with a message
// containing want.
func blockedMessage(t *testing.T, pol *teardownv1alpha1.ClusterTeardownPolicy, kind, name, want string) {
	t.Helper()
	var last []string
	// A pod that starts terminating does not end a use, so it need not
	// wake the step: its message says so by the next recheck at the
	// latest (steps.unusedRecheck, 30 s), which a loaded machine may need.
	deadline := time.Now().Add(40 * time.Second)
	for {
		got := &teardownv1alpha1.ClusterTeardownPolicy{}
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pol), got); err != nil {
			t.Fatal(err)
		}
		last = nil
		for _, b := range got.Status.BlockedObjects {
			last = append(last, b.Object.Kind+" "+b.Object.Name+": "+b.Message)
			if b.Object.Kind == kind && b.Object.Name == name && strings.Contains(b.Message, want) {
				t.Logf("blockedObjects: %s %s: %s", kind, name, b.Message)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s not reported blocked with %q; blockedObjects:\n%s", kind, name, want, strings.Join(last, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnusedHoldsWhilePodsUseIt: an agent's pods use its ServiceAccount
// (and through it a ClusterRole and its ClusterRoleBinding), a Secret in a
// volume and a ConfigMap through envFrom. Everything is deleted at once, as
// helm uninstall does. No selector names the pods: each object stays
// exactly while a pod that uses it exists (and the pods keep their rights
// throughout), goes right after the last one, and objects no pod uses go
// at once.
func TestUnusedHoldsWhilePodsUseIt(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	app := "agent-" + ns
	labels := map[string]string{"app": app}
	pol := serveUnusedPolicy(t, "unused-"+ns,
		teardownv1alpha1.Target{APIVersion: "v1", Kind: "ServiceAccount", Selector: selector("app", app)},
		teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)},
		teardownv1alpha1.Target{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", app)},
		teardownv1alpha1.Target{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: selector("app", app)},
		teardownv1alpha1.Target{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name

	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta(app)}
	secret := &corev1.Secret{ObjectMeta: meta("agent-creds"), StringData: map[string]string{"token": "t"}}
	config := &corev1.ConfigMap{ObjectMeta: meta("agent-config"), Data: map[string]string{"LEVEL": "debug"}}
	unusedSecret := &corev1.Secret{ObjectMeta: meta("leftover-creds")}
	unusedConfig := &corev1.ConfigMap{ObjectMeta: meta("leftover-config")}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: app},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: app, Namespace: ns}}}
	ds := &appsv1.DaemonSet{ObjectMeta: meta("node-agent"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: app, Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}},
	}}
	targets := []client.Object{sa, secret, config, unusedSecret, unusedConfig, role, binding}
	for _, o := range append([]client.Object{ds}, targets...) {
		create(t, o)
	}
	// agent-0 reads the Secret and the ConfigMap; agent-1 only runs as the
	// ServiceAccount.
	spec0 := *ds.Spec.Template.Spec.DeepCopy()
	spec0.Volumes = []corev1.Volume{{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}}}}
	spec0.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: config.Name}}}}
	pod0 := agentPod(ds, "node-agent-0", spec0)
	pod1 := agentPod(ds, "node-agent-1", ds.Spec.Template.Spec)
	create(t, pod0)
	create(t, pod1)
	for _, o := range targets {
		testenv.Eventually(t, 20*time.Second, fmt.Sprintf("the finalizer on %T %s", o, o.GetName()), hasFinalizer(o, key))
	}

	// helm uninstall: everything at once.
	del(t, ds, client.PropagationPolicy(metav1.DeletePropagationBackground))
	for _, o := range targets {
		del(t, o)
	}
	took := goneWithin(t, 10*time.Second, "the objects no pod uses", unusedSecret, unusedConfig)
	t.Logf("objects no pod uses went %s after the uninstall", took.Round(time.Millisecond))
	for _, p := range []*corev1.Pod{pod0, pod1} {
		testenv.Eventually(t, 30*time.Second, "the garbage collector to delete "+p.Name, func(ctx context.Context) (bool, error) {
			got := &corev1.Pod{}
			err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got)
			return err == nil && got.DeletionTimestamp != nil, err
		})
	}
	blockedMessage(t, pol, "ServiceAccount", app, "2 pods of DaemonSet "+ns+"/node-agent still run as this ServiceAccount (2 terminating)")
	blockedMessage(t, pol, "Secret", secret.Name, "pod "+ns+"/node-agent-0 of DaemonSet "+ns+"/node-agent still uses this Secret (1 terminating)")
	blockedMessage(t, pol, "ClusterRole", app, "still run with this ClusterRole's rights (through ClusterRoleBinding "+app+")")
	blockedMessage(t, pol, "ClusterRoleBinding", app, "still run as a subject of this ClusterRoleBinding")
	allStay(t, "both pods run", sa, secret, config, role, binding)
	mayGetNodes(t, ns, app)

	releasePod(t, pod0)
	took = goneWithin(t, 10*time.Second, "the Secret and ConfigMap only agent-0 used", secret, config)
	t.Logf("the Secret and the ConfigMap went %s after the last pod that used them", took.Round(time.Millisecond))
	allStay(t, "agent-1 runs", sa, role, binding)
	mayGetNodes(t, ns, app)
	blockedMessage(t, pol, "ServiceAccount", app, "pod "+ns+"/node-agent-1 of DaemonSet "+ns+"/node-agent still runs as this ServiceAccount (1 terminating)")
	allStay(t, "agent-1 runs", sa, role, binding)
	mayGetNodes(t, ns, app)

	releasePod(t, pod1)
	took = goneWithin(t, 10*time.Second, "the ServiceAccount, ClusterRole and ClusterRoleBinding", sa, role, binding)
	t.Logf("the ServiceAccount, ClusterRole and ClusterRoleBinding went %s after the last pod", took.Round(time.Millisecond))
	// The safety net rechecks every 30 s: only the pod's deletion waking the
	// cleanup explains a release this soon.
	if took > 2*time.Second {
		t.Errorf("released %s after the last pod went; want the pod's deletion to wake the cleanup", took)
	}
}

// TestUnusedHoldsAnAggregatedClusterRole: a chart's ClusterRole aggregated
// into the ClusterRole its pods are bound to (as charts extend "edit" or
// their own umbrella role) grants them its rules through the aggregation:
// kube-controller-manager's clusterrole-aggregation controller takes them
// away when it goes. It stays while a pod bound to the aggregating role
// runs, the pods keep its rights throughout, and it goes after the last.
func TestUnusedHoldsAnAggregatedClusterRole(t *testing.T) {
	testenv.SkipShort(t)
	// Short names: status messages are bounded (to 256 characters), and
	// this one names the namespace twice and the aggregating role twice.
	id := fmt.Sprint(time.Now().UnixNano() % 100_000)
	ns := "aggr-" + id
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})
	app := "addon-" + ns
	labels := map[string]string{"app": app}
	pol := serveUnusedPolicy(t, "unused-"+ns, teardownv1alpha1.Target{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name

	// addon grants get nodes; umbrella aggregates it and is what the
	// ServiceAccount is bound to. Neither is a target but addon.
	aggregateLabel := "aggregate-to-" + app
	addon := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: app, Labels: map[string]string{"app": app, aggregateLabel: "true"}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}}
	umbrellaName := "umbrella-" + id
	umbrella := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: umbrellaName},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{aggregateLabel: "true"}}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: umbrellaName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: umbrella.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: app, Namespace: ns}}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns}}
	for _, o := range []client.Object{sa, addon, umbrella, binding} {
		create(t, o)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), binding)
		_ = k8s.Delete(context.Background(), umbrella)
	})
	// The pods' rights come only through the aggregation.
	if err := testenv.WaitAllowedClient(t.Context(), k8s, testenv.Access(rbacv1.ServiceAccountKind, ns, app,
		authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Version: "v1"})); err != nil {
		t.Fatal(err)
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns, Labels: labels}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{ServiceAccountName: app, Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}}},
	}}
	create(t, ds)
	pod := agentPod(ds, "agent-0", ds.Spec.Template.Spec)
	create(t, pod)
	testenv.Eventually(t, 20*time.Second, "the finalizer on the aggregated ClusterRole", hasFinalizer(addon, key))

	del(t, addon)
	del(t, pod)
	blockedMessage(t, pol, "ClusterRole", addon.Name,
		"pod "+ns+"/agent-0 of DaemonSet "+ns+"/agent still runs with this ClusterRole's rights (through ClusterRoleBinding "+
			binding.Name+" to ClusterRole "+umbrella.Name+", which aggregates it) (1 terminating)")
	allStay(t, "a pod bound to the aggregating ClusterRole runs", addon)
	mayGetNodes(t, ns, app)

	releasePod(t, pod)
	took := goneWithin(t, 10*time.Second, "the aggregated ClusterRole", addon)
	t.Logf("the aggregated ClusterRole went %s after the last pod", took.Round(time.Millisecond))
	// What it held was real: with it gone, the aggregation controller takes
	// its rules out of the umbrella.
	testenv.Eventually(t, 30*time.Second, "the umbrella to lose the addon's rules", func(ctx context.Context) (bool, error) {
		got := &rbacv1.ClusterRole{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(umbrella), got); err != nil {
			return false, err
		}
		return len(got.Rules) == 0, nil
	})
}

// TestUnusedCountsOnlyPodsThatUseIt: what does not hold, and what holds
// without naming the object.
func TestUnusedCountsOnlyPodsThatUseIt(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	app := "held-" + ns
	pol := serveUnusedPolicy(t, "unused-"+ns,
		teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)},
		teardownv1alpha1.Target{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name
	labels := map[string]string{"app": app}

	t.Run("a pod that references nothing holds nothing", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s1", Namespace: ns, Labels: labels}}
		create(t, secret)
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}})
		testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(secret, key))
		del(t, secret)
		goneWithin(t, 10*time.Second, "the Secret", secret)
	})

	t.Run("a finished pod that is not being deleted holds nothing", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s2", Namespace: ns, Labels: labels}}
		create(t, secret)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "finished", Namespace: ns},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "c:1",
				Env: []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: "t", Optional: ptr.To(true)}}}}}}}}
		create(t, pod)
		testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(secret, key))
		// While it runs, it holds.
		del(t, secret)
		time.Sleep(time.Second)
		allStay(t, "a running pod reads it", secret)
		// It finished: no container of it runs again.
		pod.Status.Phase = corev1.PodSucceeded
		if err := k8s.Status().Update(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		took := goneWithin(t, 10*time.Second, "the Secret", secret)
		t.Logf("went %s after the pod finished", took.Round(time.Millisecond))
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
			t.Fatalf("the finished pod: %v", err)
		}
	})

	t.Run("a binding to a group holds while a pod of the group runs", func(t *testing.T) {
		other := testenv.NewNamespace(t, k8s)
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: app + "-group", Labels: labels},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:serviceaccounts:" + other}}}
		create(t, binding)
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "member", Namespace: other, Finalizers: []string{kubeletHold}},
			Spec: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}}
		create(t, pod)
		testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(binding, key))
		del(t, binding)
		del(t, pod)
		blockedMessage(t, pol, "ClusterRoleBinding", binding.Name, "pod "+other+"/member still runs as a subject of this ClusterRoleBinding (1 terminating)")
		allStay(t, "a pod of the group runs", binding)
		releasePod(t, pod)
		goneWithin(t, 10*time.Second, "the binding", binding)
	})
}

// TestUnusedTenantSeesOnlyItsNamespace: a TeardownPolicy's unused step
// needs its ServiceAccount to list pods, and counts only the pods of its
// own namespace: a Role of the tenant bound to another namespace's
// ServiceAccount, whose pod runs, is not held by it.
func TestUnusedTenantSeesOnlyItsNamespace(t *testing.T) {
	testenv.SkipShort(t)
	tenant, other := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	rules := []rbacv1.PolicyRule{{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}, Verbs: []string{"get", "list", "watch", "patch"}}}
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "cleaner", Namespace: tenant}})
	cleanerRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cleaner", Namespace: tenant}, Rules: rules}
	create(t, cleanerRole)
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cleaner", Namespace: tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cleaner"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "cleaner", Namespace: tenant}}})
	pol := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "roles", Namespace: tenant},
		Spec: teardownv1alpha1.TeardownPolicySpec{
			ServiceAccountName: "cleaner",
			Targets:            []teardownv1alpha1.Target{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role", Selector: selector("app", "held")}},
			Steps:              []teardownv1alpha1.Step{unusedStep()},
		},
	}
	create(t, pol)
	c := ready(t, pol)
	if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.ForbiddenReason ||
		!strings.Contains(c.Message, "ServiceAccount "+tenant+"/cleaner may not list pods in namespace "+tenant) {
		t.Fatalf("Ready = %s %s: %s; want False Forbidden saying the ServiceAccount may not list pods", c.Status, c.Reason, c.Message)
	}
	cleanerRole.Rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}})
	if err := k8s.Update(t.Context(), cleanerRole); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the policy to be served once its ServiceAccount may list pods", func(ctx context.Context) (bool, error) {
		got := &teardownv1alpha1.TeardownPolicy{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pol), got); err != nil {
			return false, err
		}
		return slices.ContainsFunc(got.Status.Conditions, func(c metav1.Condition) bool {
			return c.Type == teardownv1alpha1.ReadyCondition && c.Status == metav1.ConditionTrue
		}), nil
	})

	// Role "held" of the tenant, bound to ServiceAccount "outsider" of the
	// other namespace, whose pod runs.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: tenant, Labels: map[string]string{"app": "held"}}}
	create(t, role)
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: tenant},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "held"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "outsider", Namespace: other}}})
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "outsider", Namespace: other}})
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "outsider", Namespace: other},
		Spec: corev1.PodSpec{ServiceAccountName: "outsider", Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}})
	testenv.Eventually(t, 20*time.Second, "the finalizer", hasFinalizer(role, policyKey(pol)))
	del(t, role)
	goneWithin(t, 10*time.Second, "the tenant's Role, used only by another namespace's pod", role)
}

func policyKey(pol *teardownv1alpha1.TeardownPolicy) string {
	return pol.Namespace + ".teardown.dev/" + pol.Name
}
