/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// AgentPolicy is the policy of the ordered-uninstall scenario, as the
// narration shows it.
const AgentPolicy = `apiVersion: teardown.dev/v1alpha1
kind: ClusterTeardownPolicy
metadata:
  name: agent-rbac-last
spec:
  # finalizer unset: teardown.dev/agent-rbac-last, from the name
  targets:
  - apiVersion: v1
    kind: ServiceAccount
    selector: {matchLabels: {app: node-agent}}
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    selector: {matchLabels: {app: node-agent}}
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRoleBinding
    selector: {matchLabels: {app: node-agent}}
  steps:
  # No selector names the pods: the step finds every pod that runs as
  # the ServiceAccount, or as a subject of the bindings.
  - name: pods-gone
    unused: {}
`

const (
	agentApp = "node-agent"
	// KubeletHold keeps the agent's pods Terminating: no kubelet runs on a
	// local control plane, so the scenario holds each pod with this
	// finalizer and removes it as a kubelet ends a graceful shutdown.
	KubeletHold = "demo.teardown.dev/kubelet"
)

// UninstallOptions tune OrderedUninstall.
type UninstallOptions struct {
	// Namespace is the agent's namespace; created if missing.
	Namespace string
	// Pods is how many pods the agent's DaemonSet has.
	Pods int
	// ShutdownAfter is how long the pods take to stop once the policy shows
	// the RBAC held for them; each further pod takes a second more.
	ShutdownAfter time.Duration
	// Timeout bounds the scenario.
	Timeout time.Duration
}

// DefaultUninstallOptions are the demo's.
func DefaultUninstallOptions() UninstallOptions {
	return UninstallOptions{Namespace: "agents", Pods: 2, ShutdownAfter: 3 * time.Second, Timeout: 40 * time.Second}
}

// OrderedUninstall narrates to w the "ordered uninstall" scenario: an agent
// whose pods need their ServiceAccount, ClusterRole and ClusterRoleBinding
// to shut down cleanly is uninstalled all at once, as `helm uninstall`
// does, and AgentPolicy keeps the RBAC objects Terminating until the pods
// are gone. Everything it prints comes from watches on the objects and the
// policy. It fails if an RBAC object goes while a pod is still there, or if
// the scenario does not finish within opts.Timeout. A teardown-controller
// must be running against the cluster c talks to.
func OrderedUninstall(ctx context.Context, c client.WithWatch, w io.Writer, opts UninstallOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	pol := &teardownv1alpha1.ClusterTeardownPolicy{}
	if err := yaml.UnmarshalStrict([]byte(AgentPolicy), pol); err != nil {
		return fmt.Errorf("decoding the policy: %w", err)
	}
	s := &uninstall{c: c, w: w, opts: opts, pol: pol, key: teardownv1alpha1.GroupVersion.Group + "/" + pol.Name,
		objects: map[string]*objectState{}}

	if err := ensureNamespace(ctx, c, opts.Namespace); err != nil {
		return err
	}
	events, err := s.watchAll(ctx)
	if err != nil {
		return err
	}
	Step(w, "Creating a ClusterTeardownPolicy that keeps an agent's RBAC until its pods are gone:")
	for line := range strings.Lines(AgentPolicy) {
		Say(w, "  %s", strings.TrimRight(line, "\n"))
	}
	if err := c.Create(ctx, pol); err != nil {
		return fmt.Errorf("creating the policy: %w", err)
	}
	return s.run(ctx, events)
}

// objectState is what the scenario knows of one object of the agent.
type objectState struct {
	ref         string // "Pod agents/node-agent-0"
	obj         client.Object
	pod         bool
	guarded     bool
	terminating bool
	gone        bool
}

type uninstall struct {
	c    client.WithWatch
	w    io.Writer
	opts UninstallOptions
	pol  *teardownv1alpha1.ClusterTeardownPolicy
	key  string

	objects     map[string]*objectState
	pods        []*corev1.Pod
	ready       bool
	uninstalled time.Time
	lastStatus  string
	status      teardownv1alpha1.TeardownPolicyStatus
	kubelet     <-chan time.Time
	stopped     int // pods the kubelet let go
	lastPodGone time.Time
	rbacGone    time.Time
}

type objectEvent struct {
	kind string
	ev   watch.Event
}

// watchAll starts the watches the narration reads and merges them.
func (s *uninstall) watchAll(ctx context.Context) (<-chan objectEvent, error) {
	app := client.MatchingLabels{"app": agentApp}
	watches := []struct {
		kind string
		list client.ObjectList
		opts []client.ListOption
	}{
		{"ClusterTeardownPolicy", &teardownv1alpha1.ClusterTeardownPolicyList{}, []client.ListOption{client.MatchingFields{"metadata.name": s.pol.Name}}},
		{"Pod", &corev1.PodList{}, []client.ListOption{client.InNamespace(s.opts.Namespace), app}},
		{"ServiceAccount", &corev1.ServiceAccountList{}, []client.ListOption{client.InNamespace(s.opts.Namespace), app}},
		{"ClusterRole", &rbacv1.ClusterRoleList{}, []client.ListOption{app}},
		{"ClusterRoleBinding", &rbacv1.ClusterRoleBindingList{}, []client.ListOption{app}},
	}
	out := make(chan objectEvent)
	for _, wt := range watches {
		watcher, err := s.c.Watch(ctx, wt.list, wt.opts...)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", wt.kind, err)
		}
		go func() {
			defer watcher.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-watcher.ResultChan():
					if !ok {
						ev = watch.Event{Type: watch.Error, Object: &metav1.Status{Message: "the watch closed"}}
					}
					select {
					case out <- objectEvent{kind: wt.kind, ev: ev}:
					case <-ctx.Done():
						return
					}
					if !ok {
						return
					}
				}
			}
		}()
	}
	return out, nil
}

func (s *uninstall) run(ctx context.Context, events <-chan objectEvent) error {
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the scenario did not finish within %s: %s", s.opts.Timeout, s.waitingOn())
		case <-s.kubelet:
			if err := s.stopPod(ctx); err != nil {
				return err
			}
		case e := <-events:
			if e.ev.Type == watch.Error {
				return fmt.Errorf("watching %s: %w", e.kind, apierrors.FromObject(e.ev.Object))
			}
			done, err := s.handle(ctx, e)
			if err != nil || done {
				return err
			}
		}
	}
}

func (s *uninstall) at() string {
	return fmt.Sprintf("+%.1fs", time.Since(s.uninstalled).Seconds())
}

func (s *uninstall) handle(ctx context.Context, e objectEvent) (done bool, err error) {
	if e.kind == "ClusterTeardownPolicy" {
		p, ok := e.ev.Object.(*teardownv1alpha1.ClusterTeardownPolicy)
		if !ok || e.ev.Type == watch.Deleted {
			return false, nil
		}
		return s.policyChanged(ctx, p)
	}
	obj, ok := e.ev.Object.(client.Object)
	if !ok {
		return false, nil
	}
	ref := e.kind + " " + obj.GetName()
	if obj.GetNamespace() != "" {
		ref = e.kind + " " + obj.GetNamespace() + "/" + obj.GetName()
	}
	st := s.objects[ref]
	if st == nil {
		st = &objectState{ref: ref, pod: e.kind == "Pod"}
		s.objects[ref] = st
	}
	st.obj = obj
	if e.ev.Type == watch.Deleted {
		if err := s.objectGone(ctx, st); err != nil {
			return false, err
		}
		return s.done(), nil
	}
	if !st.pod && !st.guarded && slices.Contains(obj.GetFinalizers(), s.key) {
		st.guarded = true
		Say(s.w, "%s guarded: finalizers=%v", ref, obj.GetFinalizers())
		if s.allGuarded() {
			return false, s.uninstall(ctx)
		}
	}
	if obj.GetDeletionTimestamp() != nil && !st.terminating {
		st.terminating = true
		why := "its finalizer stays until the policy's steps are done"
		if st.pod {
			why = "the garbage collector deleted it with its DaemonSet; it is shutting down"
		}
		Say(s.w, "%s %s Terminating, finalizers=%v: %s", s.at(), ref, obj.GetFinalizers(), why)
		s.maybeStartKubelet()
	}
	return false, nil
}

func (s *uninstall) policyChanged(ctx context.Context, p *teardownv1alpha1.ClusterTeardownPolicy) (bool, error) {
	if !s.ready {
		c := meta.FindStatusCondition(p.Status.Conditions, teardownv1alpha1.ReadyCondition)
		if c == nil || c.ObservedGeneration != p.Generation {
			return false, nil
		}
		if c.Status != metav1.ConditionTrue {
			return false, fmt.Errorf("the policy is not Ready: %s: %s", c.Reason, c.Message)
		}
		s.ready = true
		Say(s.w, "Ready=True (%s): %s", c.Reason, c.Message)
		return false, s.install(ctx)
	}
	if s.uninstalled.IsZero() {
		return false, nil
	}
	s.status = p.Status
	summary := fmt.Sprintf("guarded=%d terminating=%d blocked=%d", p.Status.Guarded, p.Status.Terminating, p.Status.Blocked)
	var lines []string
	for _, b := range p.Status.BlockedObjects {
		msg := strings.TrimPrefix(b.Message, "step "+b.Step+": ")
		lines = append(lines, fmt.Sprintf("%s %s: step %s, %s since %s: %s",
			b.Object.Kind, objectName(b.Object.Namespace, b.Object.Name), b.Step, b.Reason, b.Since.UTC().Format(time.TimeOnly), msg))
	}
	if full := summary + strings.Join(lines, "\n"); full != s.lastStatus {
		s.lastStatus = full
		Say(s.w, "%s policy status: %s", s.at(), summary)
		for _, l := range lines {
			Say(s.w, "         blockedObjects: %s", l)
		}
	}
	s.maybeStartKubelet()
	return s.done(), nil
}

// done reports, once, that every object is gone and the policy's status
// says so too.
func (s *uninstall) done() bool {
	if !s.allGone() || s.status.Guarded != 0 || s.status.Terminating != 0 {
		return false
	}
	Step(s.w, "Done: the RBAC objects stayed Terminating while the pods shut down, and went %.1fs after the last pod",
		s.rbacGone.Sub(s.lastPodGone).Seconds())
	return true
}

func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// install creates what an agent's chart installs: a DaemonSet whose pods run
// as a ServiceAccount bound to a ClusterRole.
func (s *uninstall) install(ctx context.Context) error {
	ns := s.opts.Namespace
	Step(s.w, "Installing an agent in namespace %s: DaemonSet %s, its ServiceAccount, ClusterRole and ClusterRoleBinding", ns, agentApp)
	labels := map[string]string{"app": agentApp}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentApp, Namespace: ns, Labels: labels}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: agentApp, Labels: labels},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentApp, Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: agentApp},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: agentApp, Namespace: ns}}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: agentApp, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: agentApp, Containers: []corev1.Container{{Name: "agent", Image: "example.com/node-agent:1"}}},
			},
		},
	}
	for _, o := range []client.Object{sa, role, binding, ds} {
		if err := s.c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	// No DaemonSet controller or kubelet runs here: create the pods as the
	// DaemonSet controller would, held as a running kubelet would hold them.
	for i := range s.opts.Pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", agentApp, i), Namespace: ns, Labels: labels, Finalizers: []string{KubeletHold},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			},
			Spec: ds.Spec.Template.Spec,
		}
		if err := s.c.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		s.pods = append(s.pods, pod)
	}
	Say(s.w, "%d pods running as ServiceAccount %s (no kubelet runs here: the demo holds each pod with finalizer %s and plays the kubelet)",
		len(s.pods), agentApp, KubeletHold)
	return nil
}

// uninstall deletes everything at once, as `helm uninstall` does.
func (s *uninstall) uninstall(ctx context.Context) error {
	ns := s.opts.Namespace
	Step(s.w, "Uninstalling everything at once, as helm uninstall does:")
	Say(s.w, "kubectl delete -n %[1]s daemonset/%[2]s serviceaccount/%[2]s; kubectl delete clusterrole/%[2]s clusterrolebinding/%[2]s", ns, agentApp)
	s.uninstalled = time.Now()
	targets := []client.Object{
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: agentApp, Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: agentApp, Namespace: ns}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: agentApp}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: agentApp}},
	}
	for _, o := range targets {
		if err := s.c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			return fmt.Errorf("deleting %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// maybeStartKubelet lets the pods stop once the policy shows every RBAC
// object held for them: from then on a person can see the order kept.
func (s *uninstall) maybeStartKubelet() {
	if s.kubelet != nil || s.stopped > 0 || s.uninstalled.IsZero() || int(s.status.Blocked) < s.rbacCount() {
		return
	}
	for _, st := range s.objects {
		if st.pod && !st.terminating {
			return
		}
	}
	Say(s.w, "%s kubelet: the pods shut down gracefully, still using their ServiceAccount's RBAC; the first stops in %s",
		s.at(), s.opts.ShutdownAfter)
	s.kubelet = time.After(s.opts.ShutdownAfter)
}

// stopPod ends the next pod's shutdown, as its kubelet would.
func (s *uninstall) stopPod(ctx context.Context) error {
	pod := s.pods[s.stopped]
	s.stopped++
	s.kubelet = nil
	if s.stopped < len(s.pods) {
		s.kubelet = time.After(time.Second)
	}
	Say(s.w, "%s kubelet: pod %s stopped; removing %s", s.at(), pod.Name, KubeletHold)
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers","value":[%q]},{"op":"remove","path":"/metadata/finalizers/0"}]`, KubeletHold)
	if err := s.c.Patch(ctx, pod, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing pod %s: %w", pod.Name, err)
	}
	return nil
}

func (s *uninstall) objectGone(ctx context.Context, st *objectState) error {
	if st.gone {
		return nil
	}
	st.gone = true
	if st.pod {
		s.lastPodGone = time.Now()
		Say(s.w, "%s %s deleted", s.at(), st.ref)
		return nil
	}
	// The RBAC object is gone: every pod must be gone too. Watches are
	// separate streams, so ask the API server about a pod whose deletion
	// has not arrived yet.
	var pods []string
	for _, o := range s.objects {
		if !o.pod || o.gone {
			continue
		}
		err := s.c.Get(ctx, client.ObjectKeyFromObject(o.obj), &corev1.Pod{})
		if !apierrors.IsNotFound(err) {
			pods = append(pods, o.ref)
		}
	}
	if len(pods) > 0 {
		return fmt.Errorf("%s went while %s still needed it", st.ref, strings.Join(pods, ", "))
	}
	s.rbacGone = time.Now()
	Say(s.w, "%s %s deleted: the unused step found no pod using it, so the controller removed %s", s.at(), st.ref, s.key)
	return nil
}

func (s *uninstall) rbacCount() int {
	n := 0
	for _, st := range s.objects {
		if !st.pod {
			n++
		}
	}
	return n
}

func (s *uninstall) allGuarded() bool {
	n := 0
	for _, st := range s.objects {
		if !st.pod && st.guarded {
			n++
		}
	}
	return n == 3
}

func (s *uninstall) allGone() bool {
	if s.uninstalled.IsZero() {
		return false
	}
	for _, st := range s.objects {
		if !st.gone {
			return false
		}
	}
	return true
}

// waitingOn says what a timed-out scenario was still waiting for.
func (s *uninstall) waitingOn() string {
	switch {
	case !s.ready:
		return "the policy never became Ready"
	case s.uninstalled.IsZero():
		return "the policy's finalizer never appeared on every RBAC object"
	}
	var left []string
	for _, st := range s.objects {
		if !st.gone {
			left = append(left, st.ref)
		}
	}
	slices.Sort(left)
	if len(left) == 0 {
		return "the policy status never showed nothing guarded: " + s.lastStatus
	}
	return "still there: " + strings.Join(left, ", ")
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
