/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package admit holds the controller's two optional admission webhooks (the
// outbound webhook step is internal/steps'). attach.go is the mutating one
// that puts the finalizers of Automatic policies on objects as they are
// created, so that an object deleted right after its creation is still
// cleaned up: without it, the controller attaches the finalizer only after
// it sees the object, and the API server refuses new finalizers once
// deletion has started. inuse.go is the validating one that refuses new
// users of an object an unused step is tearing down.
package admit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// Path is where the webhook is served.
const Path = "/attach-finalizers"

// The webhooks inside the MutatingWebhookConfiguration: one for
// ClusterTeardownPolicies, one for TeardownPolicies (see Desired).
const (
	WebhookName           = "attach.teardown.dev"
	NamespacedWebhookName = "attach-namespaced.teardown.dev"
)

// Attacher answers CREATE admission requests with a patch that adds the keys
// of every Automatic policy in force that the new object matches.
type Attacher struct {
	// Client reads policies and namespace labels from the cache. Every
	// replica serves the webhook, while only the leader runs the
	// controllers, so the webhook reads the policies themselves: those whose
	// Ready condition is True are in force.
	Client client.Client

	mu     sync.Mutex
	parsed map[types.UID]*policy.Policy // by UID, rebuilt when the generation changes
}

// Handle implements admission.Handler.
func (a *Attacher) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	gvk := schema.GroupVersionKind(req.Kind)
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	if obj.Namespace == "" {
		obj.Namespace = req.Namespace
	}
	if obj.DeletionTimestamp != nil {
		return admission.Allowed("")
	}
	nsLabels, err := a.namespaceLabels(ctx, obj.Namespace)
	if err != nil {
		// Failing open: the controller still attaches after creation.
		logf.FromContext(ctx).Info("Could not read namespace labels; not attaching at create", "namespace", obj.Namespace, "err", err.Error())
		return admission.Allowed("")
	}
	policies, err := a.inForce(ctx, obj.Namespace)
	if err != nil {
		logf.FromContext(ctx).Info("Could not read the policies; not attaching at create", "err", err.Error())
		return admission.Allowed("")
	}
	var keys []string
	for _, pol := range policies {
		if pol.Attach != teardownv1alpha1.AttachAutomatic || !pol.TargetsKind(gvk) {
			continue
		}
		if pol.Matches(gvk, &obj, nsLabels) && !slices.Contains(obj.Finalizers, pol.Key) && !slices.Contains(keys, pol.Key) {
			keys = append(keys, pol.Key)
		}
	}
	if len(keys) == 0 {
		return admission.Allowed("")
	}
	var doc map[string]any
	if err := json.Unmarshal(req.Object.Raw, &doc); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the object: %w", err))
	}
	metadata, _ := doc["metadata"].(map[string]any)
	if metadata == nil {
		metadata = map[string]any{}
		doc["metadata"] = metadata
	}
	finalizers, _ := metadata["finalizers"].([]any)
	for _, k := range keys {
		finalizers = append(finalizers, k)
	}
	metadata["finalizers"] = finalizers
	// The object has no UID yet, so the record cannot be bound to it: it
	// says "attached at create", which lets the controller release the key
	// if the object stops matching before it is deleted, and which the
	// controller binds to the UID (finalizer.Attached) once it sees the
	// object selected. Unbound, it never makes the controller act on an
	// object it does not select: anyone creating an object can write it.
	annotations, _ := metadata["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	for _, k := range keys {
		annotations[finalizer.AttachedAnnotation(k)] = finalizer.AttachedAtCreate
	}
	metadata["annotations"] = annotations
	mutated, err := json.Marshal(doc)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, mutated)
}

// inForce returns the policies whose Ready condition is True and that are
// not being deleted, parsing each version once.
func (a *Attacher) inForce(ctx context.Context, namespace string) ([]*policy.Policy, error) {
	// Only what can guard an object in namespace: its own TeardownPolicies
	// (none for a cluster-scoped object) and the cluster's. Read from the
	// cache without copies (nothing here writes them; policy.FromObject
	// copies what it keeps): listing and copying every policy of the cluster
	// on every CREATE was 88% of the handler's CPU, 0.91 ms a call at 301
	// policies (docs/performance.md, Scale).
	var objs []teardownv1alpha1.PolicyObject
	if namespace != "" {
		namespaced := &teardownv1alpha1.TeardownPolicyList{}
		if err := a.Client.List(ctx, namespaced, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range namespaced.Items {
			objs = append(objs, &namespaced.Items[i])
		}
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := a.Client.List(ctx, cluster, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range cluster.Items {
		objs = append(objs, &cluster.Items[i])
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.parsed == nil || len(a.parsed) > maxParsedPolicies {
		// Entries of namespaces no CREATE comes from again are never
		// pruned below: start afresh now and then.
		a.parsed = map[types.UID]*policy.Policy{}
	}
	seen := map[types.UID]bool{}
	var out []*policy.Policy
	for _, obj := range objs {
		seen[obj.GetUID()] = true
		ready := meta.FindStatusCondition(obj.PolicyStatus().Conditions, teardownv1alpha1.ReadyCondition)
		if obj.GetDeletionTimestamp() != nil || ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != obj.GetGeneration() {
			continue
		}
		pol, ok := a.parsed[obj.GetUID()]
		if !ok || pol.Generation != obj.GetGeneration() {
			var err error
			if pol, err = policy.FromObject(obj); err != nil {
				continue
			}
			a.parsed[obj.GetUID()] = pol
		}
		out = append(out, pol)
	}
	// Forget the policies gone from what was listed.
	for uid, pol := range a.parsed {
		if (pol.Ref.Namespace == namespace || pol.Ref.Namespace == "") && !seen[uid] {
			delete(a.parsed, uid)
		}
	}
	return out, nil
}

// maxParsedPolicies bounds the parsed policies kept between CREATEs.
const maxParsedPolicies = 4096

func (a *Attacher) namespaceLabels(ctx context.Context, ns string) (labels.Set, error) {
	if ns == "" {
		return nil, nil
	}
	nsObj := &metav1.PartialObjectMetadata{}
	nsObj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := a.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return nil, err
	}
	return nsObj.Labels, nil
}

// Desired is what the controller keeps in the attach webhook
// configuration: the CREATE rules of the webhook for ClusterTeardownPolicies
// (every namespace but the installer's exclusions), and of the webhook for
// TeardownPolicies, which intercepts only the namespaces that have one: a
// tenant's policy never puts a cluster-wide rule on the API server.
type Desired struct {
	Cluster    []admissionregistrationv1.RuleWithOperations
	Namespaced []admissionregistrationv1.RuleWithOperations
	// Namespaces are those of the namespaced policies, sorted.
	Namespaces []string
}

// Rules returns the webhook rules for the kinds Automatic policies target:
// CREATE of exactly those resources, so no other request ever reaches the
// webhook.
func Rules(index *policy.Index, mapper meta.RESTMapper) Desired {
	var d Desired
	clusterSeen, namespacedSeen := map[string]bool{}, map[string]bool{}
	for _, pol := range index.All() {
		if pol.Deleting || pol.Attach != teardownv1alpha1.AttachAutomatic {
			continue
		}
		rules, seen := &d.Cluster, clusterSeen
		if pol.Ref.Kind == policy.KindNamespaced {
			rules, seen = &d.Namespaced, namespacedSeen
			if !slices.Contains(d.Namespaces, pol.Ref.Namespace) {
				d.Namespaces = append(d.Namespaces, pol.Ref.Namespace)
			}
		}
		for _, t := range pol.Targets {
			mapping, err := mapper.RESTMapping(t.GVK.GroupKind(), t.GVK.Version)
			if err != nil {
				continue // reported in the policy's status
			}
			r := mapping.Resource
			if seen[r.String()] {
				continue
			}
			seen[r.String()] = true
			*rules = append(*rules, admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{r.Group}, APIVersions: []string{r.Version}, Resources: []string{r.Resource},
				},
			})
		}
	}
	for _, rules := range [][]admissionregistrationv1.RuleWithOperations{d.Cluster, d.Namespaced} {
		sort.Slice(rules, func(i, j int) bool {
			a, b := rules[i].Rule, rules[j].Rule
			return a.APIGroups[0]+"/"+a.APIVersions[0]+"/"+a.Resources[0] < b.APIGroups[0]+"/"+b.APIVersions[0]+"/"+b.Resources[0]
		})
	}
	sort.Strings(d.Namespaces)
	return d
}

// namespaceNameKey is the label every namespace carries with its name.
const namespaceNameKey = "kubernetes.io/metadata.name"

// SyncRules keeps the MutatingWebhookConfiguration name in step with d: the
// rules of WebhookName, and the rules of NamespacedWebhookName with, in its
// namespaceSelector, a "kubernetes.io/metadata.name In (namespaces)"
// requirement beside the installer's own. The rest of the configuration
// (client config, CA bundle, failure policy, the installer's exclusions) is
// the installer's. With no rules a webhook receives nothing. A configuration
// without the namespaced webhook (an older install) only gets the cluster
// rules: TeardownPolicies are then attached by the controller alone.
func SyncRules(ctx context.Context, c client.Client, name string, d Desired) error {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cfg); err != nil {
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", name, err)
	}
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == WebhookName })
	if i < 0 {
		return fmt.Errorf("MutatingWebhookConfiguration %s has no webhook named %s", name, WebhookName)
	}
	want := cfg.DeepCopy()
	want.Webhooks[i].Rules = orEmpty(d.Cluster)
	if j := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return w.Name == NamespacedWebhookName }); j >= 0 {
		w := &want.Webhooks[j]
		w.Rules = orEmpty(d.Namespaced)
		if w.NamespaceSelector == nil {
			w.NamespaceSelector = &metav1.LabelSelector{}
		}
		exprs := slices.DeleteFunc(slices.Clone(w.NamespaceSelector.MatchExpressions), func(e metav1.LabelSelectorRequirement) bool {
			return e.Key == namespaceNameKey && e.Operator == metav1.LabelSelectorOpIn
		})
		if len(d.Namespaces) > 0 {
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: namespaceNameKey, Operator: metav1.LabelSelectorOpIn, Values: d.Namespaces})
		}
		w.NamespaceSelector.MatchExpressions = exprs
	}
	if equality.Semantic.DeepEqual(cfg.Webhooks, want.Webhooks) {
		return nil
	}
	// Our own configuration object, read just now: an Update with its
	// resourceVersion is the optimistic lock we want.
	if err := c.Update(ctx, want); err != nil {
		return fmt.Errorf("updating the rules of MutatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}

func orEmpty(rules []admissionregistrationv1.RuleWithOperations) []admissionregistrationv1.RuleWithOperations {
	if rules == nil {
		return []admissionregistrationv1.RuleWithOperations{}
	}
	return rules
}
