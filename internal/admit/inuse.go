/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/inuse"
	"github.com/teardown-dev/teardown/internal/policy"
)

// InUsePath is where the in-use webhook is served.
const InUsePath = "/refuse-new-uses"

// InUseWebhookName is the webhook inside ValidatingWebhookConfiguration
// InUseConfiguration (config/webhook/inuse).
const (
	InUseWebhookName   = "inuse.teardown.dev"
	InUseConfiguration = "teardown-refuse-new-uses"
)

// InUse refuses a pod that would start using a Secret, ConfigMap or
// ServiceAccount of its namespace while that object is being deleted and an
// unused step still holds it, as NamespaceLifecycle refuses new objects in
// a terminating namespace. It is what makes the unused step's promise ("held
// while any pod that exists uses it") hold for pods created during the
// teardown: Kubernetes has no transaction across two objects, so the step's
// confirming list of pods cannot see a pod stored after it; only admission
// can keep such a pod from being stored at all.
//
// Two moments are covered together with the step (steps.Runner.UnusedGrace):
//   - a pod whose check runs after the object's deletion was stored is
//     refused here, because the check reads the object from the API server
//     (a quorum read), never from a cache that may not show the deletion yet;
//   - a pod whose check ran before the deletion was stored ("alive") is
//     stored within the API server's admission-to-storage latency after that
//     check; the step lists pods no earlier than UnusedGrace after the
//     deletion, so it sees such a pod as long as that latency is below the
//     grace.
//
// RBAC objects are not covered: a pod does not name the binding that gives
// its ServiceAccount rights, and finding them would mean every replica
// watching every binding. The race there is a new pod starting without
// rights it expected (its requests are refused), never with more.
type InUse struct {
	// Client reads policies (the manager's cache, as Attacher does: every
	// replica serves the webhook).
	Client client.Reader
	// Reader reads the referenced objects from the API server, metadata
	// only.
	Reader client.Reader
	// FailClosed refuses the pod when the check could not be made (the
	// configuration's failurePolicy Fail); otherwise it is admitted with a
	// warning, as failurePolicy Ignore would admit it.
	FailClosed bool
}

// heldKinds are the kinds a pod names by reference, which the webhook checks
// (inuse.NamedByPods).
var heldKinds = []schema.GroupKind{{Kind: "Secret"}, {Kind: "ConfigMap"}, {Kind: "ServiceAccount"}}

// reference is one object of the pod's namespace the pod uses.
type reference struct {
	gk   schema.GroupKind
	name string
}

func (r reference) String() string { return fmt.Sprintf("%s %q", r.gk.Kind, r.name) }

// Handle implements admission.Handler.
func (u *InUse) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" {
		return admission.Allowed("")
	}
	creating := req.Operation == admissionv1.Create && req.SubResource == ""
	// An existing pod gains a reference only through an ephemeral
	// container; every other field that names one is immutable.
	debugging := req.Operation == admissionv1.Update && req.SubResource == "ephemeralcontainers"
	if !creating && !debugging {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod: %w", err))
	}
	ns := pod.Namespace
	if ns == "" {
		ns = req.Namespace
	}
	refs := referencesOf(pod)
	if debugging {
		old := &corev1.Pod{}
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the pod as it was: %w", err))
		}
		had := referencesOf(old)
		refs = slices.DeleteFunc(refs, func(r reference) bool { return slices.Contains(had, r) })
	}
	if len(refs) == 0 {
		return admission.Allowed("")
	}
	held, err := unusedHolds(ctx, u.Client, ns)
	if err != nil {
		return u.unchecked(ctx, fmt.Errorf("reading the teardown policies: %w", err))
	}
	refs = slices.DeleteFunc(refs, func(r reference) bool { return !held.kinds[r.gk] })
	terminating, err := u.terminating(ctx, ns, refs, held.keys)
	if len(terminating) > 0 {
		return admission.Denied(refusal(terminating))
	}
	if err != nil {
		return u.unchecked(ctx, err)
	}
	return admission.Allowed("")
}

// unchecked answers when the check could not be made.
func (u *InUse) unchecked(ctx context.Context, err error) admission.Response {
	msg := "could not check whether an object this pod uses is being deleted by a teardown policy: " + err.Error()
	if u.FailClosed {
		return admission.Denied(msg)
	}
	logf.FromContext(ctx).Info("Admitting a pod unchecked", "err", err.Error())
	return admission.Allowed("").WithWarnings(msg)
}

// terminating reads each reference from the API server, all at once (the
// sooner each read, the narrower the window the step's grace must cover),
// and returns those being deleted that still carry one of keys. NotFound is
// not this webhook's business: the pod waits for the object as without it.
func (u *InUse) terminating(ctx context.Context, ns string, refs []reference, keys map[string]bool) ([]reference, error) {
	found := make([]bool, len(refs))
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, r := range refs {
		wg.Go(func() {
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(r.gk.WithVersion("v1"))
			err := u.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: r.name}, obj)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs[i] = fmt.Errorf("reading %s: %w", r, err)
			case obj.DeletionTimestamp != nil:
				found[i] = slices.ContainsFunc(obj.Finalizers, func(f string) bool { return keys[f] })
			}
		})
	}
	wg.Wait()
	var out []reference
	var failed []error
	for i, r := range refs {
		if found[i] {
			out = append(out, r)
		}
		if errs[i] != nil {
			failed = append(failed, errs[i])
		}
	}
	if len(failed) > 0 {
		return out, failed[0]
	}
	return out, nil
}

// refusal says why the pod is refused. It names only objects of the pod's
// own namespace (what the pod references), never the policy, which may be a
// ClusterTeardownPolicy the pod's author cannot read.
func refusal(refs []reference) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	verb, subj, obj, other := "is", "it", "it", "another one"
	if len(refs) > 1 {
		verb, subj, obj, other = "are", "they", "them", "other ones"
	}
	return fmt.Sprintf("%[1]s %[2]s being deleted: a teardown policy's unused step keeps %[4]s only until the pods that already use %[4]s are gone, "+
		"so no new pod may start using %[4]s (a pod created now would lose %[4]s). Create the pod after %[3]s %[2]s gone and created again, or make it use %[5]s",
		strings.Join(names, ", "), verb, subj, obj, other)
}

// referencesOf lists the Secrets, ConfigMaps and ServiceAccount of its
// namespace a pod uses, as the unused step counts them (inuse.PodOf).
func referencesOf(pod *corev1.Pod) []reference {
	p := inuse.PodOf(pod)
	refs := []reference{{gk: heldKinds[2], name: p.ServiceAccount}}
	for _, s := range p.Secrets {
		refs = append(refs, reference{gk: heldKinds[0], name: s})
	}
	for _, c := range p.ConfigMaps {
		refs = append(refs, reference{gk: heldKinds[1], name: c})
	}
	return refs
}

// holds are what unused steps may hold in one namespace: the kinds they
// target among heldKinds, and the finalizer keys of their policies.
type holds struct {
	kinds map[schema.GroupKind]bool
	keys  map[string]bool
}

// unusedHolds reads the policies with an unused step that reach namespace
// ns: its TeardownPolicies and every ClusterTeardownPolicy (whatever its
// namespaceSelector: holding more is the safe side). A policy that is not
// Ready or is being deleted counts too: the teardowns it started finish
// under it.
func unusedHolds(ctx context.Context, c client.Reader, ns string) (holds, error) {
	h := holds{kinds: map[schema.GroupKind]bool{}, keys: map[string]bool{}}
	add := func(ref policy.Ref, spec *teardownv1alpha1.TeardownPolicySpec) {
		if !slices.ContainsFunc(spec.Steps, func(s teardownv1alpha1.Step) bool { return s.Unused != nil }) {
			return
		}
		key := spec.Finalizer
		if key == "" {
			key = policy.DefaultKey(ref)
		}
		h.keys[key] = true
		for _, t := range spec.Targets {
			gv, err := schema.ParseGroupVersion(t.APIVersion)
			if gk := gv.WithKind(t.Kind).GroupKind(); err == nil && inuse.NamedByPods(gk) {
				h.kinds[gk] = true
			}
		}
	}
	namespaced := &teardownv1alpha1.TeardownPolicyList{}
	if err := c.List(ctx, namespaced, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return h, err
	}
	for i := range namespaced.Items {
		p := &namespaced.Items[i]
		add(policy.Ref{Kind: policy.KindNamespaced, Namespace: p.Namespace, Name: p.Name}, &p.Spec)
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := c.List(ctx, cluster, client.UnsafeDisableDeepCopy); err != nil {
		return h, err
	}
	for i := range cluster.Items {
		p := &cluster.Items[i]
		add(policy.Ref{Kind: policy.KindCluster, Name: p.Name}, &p.Spec)
	}
	return h, nil
}
