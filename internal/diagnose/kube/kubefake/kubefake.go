/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package kubefake builds a kube.Cluster over client-go's fakes, so that
// the diagnosis engine runs in a unit test with no control plane: give it
// the objects of a scenario, typed (corev1.Pod, appsv1.Deployment...) or
// unstructured (custom resources), and every getter of the cluster layer
// reads them.
//
// The fakes answer as an API server would, where the engine depends on it:
// discovery lists every kind given (and the built-in kinds the engine
// reads), server-side dry-runs change nothing and succeed, every
// SubjectAccessReview is allowed, and a dry-run eviction is allowed. Tests
// change an answer with a reactor on Fakes (PrependReactor).
package kubefake

import (
	"fmt"
	"sort"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Fakes are the clients a fake Cluster reads through, for reactors.
type Fakes struct {
	Kube      *k8sfake.Clientset
	Dynamic   *dynamicfake.FakeDynamicClient
	Metadata  *metadatafake.FakeMetadataClient
	Discovery *discoveryfake.FakeDiscovery
	// Mapper maps every kind served.
	Mapper meta.RESTMapper
}

// builtIn are the kinds served although no object of them is given: the
// ones the engine lists (an empty list, not a NotFound, answers for them).
var builtIn = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Namespace"}, {Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Node"}, {Version: "v1", Kind: "PersistentVolume"}, {Version: "v1", Kind: "PersistentVolumeClaim"},
	{Version: "v1", Kind: "Event"},
	{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}, {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
}

// clusterScoped are the kinds, of those a test may give, that are not
// namespaced.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "StorageClass": true, "VolumeAttachment": true,
	"CSIDriver": true, "CSINode": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"APIService": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true, "PriorityClass": true,
	"IPAddress": true, "ServiceCIDR": true, "VolumeAttributesClass": true, "DeviceClass": true, "ResourceSlice": true,
	"ClusterTeardownPolicy": true,
}

// New builds a Cluster whose reads are served by client-go's fakes holding
// objs. An unstructured object of a kind client-go does not know is served
// by the dynamic and metadata clients only; a cluster-scoped custom kind
// must have no namespace.
func New(t testing.TB, objs ...runtime.Object) (*kube.Cluster, *Fakes) {
	t.Helper()
	kinds := map[schema.GroupVersionKind]bool{}
	for _, gvk := range builtIn {
		kinds[gvk] = true
	}
	namespaced := map[schema.GroupVersionKind]bool{}
	var typed, whole, partial []runtime.Object
	for _, o := range objs {
		gvk, err := kindOf(o)
		if err != nil {
			t.Fatalf("kubefake: %v", err)
		}
		kinds[gvk] = true
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatalf("kubefake: %v", err)
		}
		if m.GetNamespace() != "" {
			namespaced[gvk] = true
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatalf("kubefake: %v", err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetGroupVersionKind(gvk)
		whole = append(whole, obj)
		partial = append(partial, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
			ObjectMeta: *metaOf(m)})
		if scheme.Scheme.Recognizes(gvk) {
			tobj, err := scheme.Scheme.New(gvk)
			if err != nil {
				t.Fatalf("kubefake: %v", err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, tobj); err != nil {
				t.Fatalf("kubefake: %v", err)
			}
			typed = append(typed, tobj)
		}
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	byGV := map[string][]metav1.APIResource{}
	for gvk := range kinds {
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Kind] || (!namespaced[gvk] && !scheme.Scheme.Recognizes(gvk) && !isBuiltIn(gvk)) {
			scope = meta.RESTScopeRoot
		}
		mapper.AddSpecific(gvk, plural, singular, scope)
		listKinds[plural] = gvk.Kind + "List"
		gv := gvk.GroupVersion().String()
		byGV[gv] = append(byGV[gv], metav1.APIResource{Name: plural.Resource, SingularName: singular.Resource, Kind: gvk.Kind,
			Namespaced: scope == meta.RESTScopeNamespace, Verbs: metav1.Verbs{"get", "list", "watch", "patch", "update", "delete"}})
	}
	disc := &discoveryfake.FakeDiscovery{Fake: &k8stesting.Fake{}}
	gvs := make([]string, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Strings(gvs)
	for _, gv := range gvs {
		rs := byGV[gv]
		sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: rs})
	}
	metaScheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(metaScheme); err != nil {
		t.Fatalf("kubefake: %v", err)
	}
	f := &Fakes{
		Kube:      k8sfake.NewClientset(typed...),
		Dynamic:   dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, whole...),
		Metadata:  metadatafake.NewSimpleMetadataClient(metaScheme, partial...),
		Discovery: disc,
		Mapper:    mapper,
	}
	f.Dynamic.PrependReactor("patch", "*", dryRunPatch(f.Dynamic.Tracker()))
	f.Kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "kubefake allows every request"}
		return true, sar, nil
	})
	f.Kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil
	})
	// The fake's /finalize drops the dry-run option: answer with the body,
	// as the API server answers a dry-run, and change nothing.
	f.Kube.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "finalize" {
			return false, nil, nil
		}
		return true, a.(k8stesting.CreateAction).GetObject(), nil
	})
	c := kube.New(kube.Clients{Kube: f.Kube, Dynamic: servedOnly{Interface: f.Dynamic, served: served(listKinds)}, Metadata: f.Metadata, Discovery: preferred{disc}, Mapper: mapper})
	return c, f
}

// preferred serves the fake's resources as the server's preferred ones:
// client-go's fake discovery answers none, and the cluster layer lists
// kinds from them (Resources).
type preferred struct{ *discoveryfake.FakeDiscovery }

func (d preferred) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return d.Resources, nil
}

// dryRunPatch answers a patch sent with dryRun=All with the object as it
// is, as the API server would when every check passes, and changes nothing.
func dryRunPatch(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		p, ok := a.(k8stesting.PatchActionImpl)
		if !ok || len(p.PatchOptions.DryRun) == 0 {
			return false, nil, nil
		}
		obj, err := tracker.Get(p.GetResource(), p.GetNamespace(), p.GetName())
		return true, obj, err
	}
}

func served(listKinds map[schema.GroupVersionResource]string) map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	for gvr := range listKinds {
		out[gvr] = true
	}
	return out
}

func isBuiltIn(gvk schema.GroupVersionKind) bool {
	for _, b := range builtIn {
		if b == gvk {
			return true
		}
	}
	return false
}

// kindOf is o's kind: its TypeMeta, else the one client-go's scheme knows.
func kindOf(o runtime.Object) (schema.GroupVersionKind, error) {
	if gvk := o.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		return gvk, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("the kind of %T: %w", o, err)
	}
	return gvks[0], nil
}

func metaOf(m metav1.Object) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
		Generation: m.GetGeneration(), CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
		OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(), ManagedFields: m.GetManagedFields()}
}
