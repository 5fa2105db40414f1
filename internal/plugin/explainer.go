/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

var (
	gvrAPIService    = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	gvrCRD           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrPolicy        = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "teardownpolicies"}
	gvrClusterPolicy = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "clusterteardownpolicies"}
)

const (
	// maxDepth bounds chains (foreground owners, CRDs, namespaces).
	maxDepth = 6
	// maxChildren bounds the objects explained in detail under one node.
	maxChildren = 25
	// gcGrace is how long a GC finalizer may sit with nothing left to wait
	// on before explain calls the garbage collector stuck (E2), unless
	// explain --gc-stall-after says otherwise; other built-in controllers
	// are judged with it too.
	gcGrace = 2 * time.Minute
)

// explainer walks the catalog of causes for one target. It only reads, and
// issues server-side dry-runs; it never writes.
type explainer struct {
	c   *cluster
	now time.Time

	once      map[string]*sync.Once
	resources []apiResource
	crds      []unstructured.Unstructured
	apiSvcs   []unstructured.Unstructured
	policies  []policyInfo
	workloads []workload
	nsCache   map[string]*corev1.Namespace
	visited   map[types.UID]bool
	scopes    map[string][]metaItem
	// kube-controller-manager's liveness from its Lease, read once.
	kcm ControllerLiveness
	// gcStallAfter is how long the garbage collector may leave a
	// foregroundDeletion or orphan finalizer with nothing left to do, or a
	// foreground owner's blocking dependents undeleted, before E2.
	gcStallAfter time.Duration
	mu           sync.Mutex
}

func newExplainer(c *cluster, now time.Time) *explainer {
	return &explainer{c: c, now: now, nsCache: map[string]*corev1.Namespace{}, visited: map[types.UID]bool{}, gcStallAfter: gcGrace}
}

// policyInfo is a TeardownPolicy or ClusterTeardownPolicy, read without the
// Go types so the plugin works with any served version.
type policyInfo struct {
	Ref       ObjectRef
	Finalizer string
	Steps     []string
}

type workload struct {
	Ref      ObjectRef
	Labels   map[string]string
	Ready    int32
	Desired  int32
	Deleting bool
	// ServiceAccount its pods run as ("default" when unset).
	ServiceAccount string
	// Containers are the names and image names (no registry, no tag) of
	// its pod template's containers: CSI sidecars run inside a driver's
	// controller, named after the driver.
	Containers []string
}

// containersOf returns the container names and image names of a pod spec.
func containersOf(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		img := c.Image
		if i := strings.LastIndex(img, "/"); i >= 0 {
			img = img[i+1:]
		}
		if i := strings.IndexAny(img, ":@"); i >= 0 {
			img = img[:i]
		}
		out = append(out, c.Name, img)
	}
	return out
}

// serviceAccountOf returns the ServiceAccount of a pod spec.
func serviceAccountOf(spec *corev1.PodSpec) string {
	if spec.ServiceAccountName != "" {
		return spec.ServiceAccountName
	}
	return "default"
}

// explain builds the report for t.
func (e *explainer) explain(ctx context.Context, t target) (*Report, error) {
	obj, err := e.getObject(ctx, t.GVR, t.Namespace, t.Name)
	if apierrors.IsNotFound(err) && t.isNamespace() {
		// A12: a namespace finalized too early leaves its content behind.
		return e.deletedNamespace(ctx, t, err)
	}
	if err != nil {
		return nil, err
	}
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.ref()}
	rep.Target.UID = string(obj.GetUID())
	rep.Finalizers = append(rep.Finalizers, obj.GetFinalizers()...)
	if dts := obj.GetDeletionTimestamp(); dts != nil {
		rep.Terminating = true
		rep.DeletionTimestamp = dts
		rep.TerminatingFor = age(e.now.Sub(dts.Time))
	}
	if t.isNamespace() {
		specFins, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "finalizers")
		for _, f := range specFins {
			rep.Finalizers = append(rep.Finalizers, "spec:"+f)
		}
		rep.Findings = e.namespaceFindings(ctx, obj)
	} else {
		rep.Findings = e.objectFindings(ctx, t.GVR, t.GVK, obj, 0)
		rep.Findings = append(rep.Findings, e.ownerRefFindings(ctx, t, obj)...)
	}
	if rep.Terminating && e.usesControllerManager(rep.Findings) {
		kcm := e.kcmLiveness(ctx)
		e.controllerManagerStopped(rep.Findings, kcm)
		rep.Controllers = append(rep.Controllers, kcm)
	}
	rep.RootBlockers = markRoots(rep.Findings)
	rep.Blocked = len(rep.RootBlockers) > 0
	return rep, nil
}

// usesControllerManager is true when a finding waits on a controller of
// kube-controller-manager.
func (e *explainer) usesControllerManager(fs []Finding) bool {
	found := false
	walkFindings(fs, func(f *Finding) {
		if f.Owner != nil && strings.Contains(f.Owner.Component, "(kube-controller-manager)") {
			found = true
		}
	})
	return found
}

// controllerManagerStopped makes sure no finding waits, as if in progress,
// on a controller of a kube-controller-manager whose Lease shows it
// stopped: nothing it runs makes progress, so such a wait is a blocker with
// kube-controller-manager as its cause.
func (e *explainer) controllerManagerStopped(fs []Finding, kcm ControllerLiveness) {
	if !kcm.stopped() {
		return
	}
	walkFindings(fs, func(f *Finding) {
		if f.Owner == nil || !strings.Contains(f.Owner.Component, "(kube-controller-manager)") {
			return
		}
		f.Owner.State, f.Owner.Evidence = kcm.ownerState(), []string{kcm.Evidence}
		if f.Severity != SeverityWaiting {
			return
		}
		f.Severity = SeverityBlocker
		f.Message += "; but " + kcm.why() + "; " + kcmStoppedMeaning
		f.FixOwner = "cluster operator"
		f.Remedy = "bring kube-controller-manager back: " + kcmCheck
	})
}

// deletedNamespace looks for objects left in a namespace that no longer
// exists (A12), or returns notFound.
func (e *explainer) deletedNamespace(ctx context.Context, t target, notFound error) (*Report, error) {
	items, _ := e.c.listMeta(ctx, e.getResources(), t.Name, "", 8)
	var left []metaItem
	for _, it := range items {
		if it.Res.GVR.Resource != "events" {
			left = append(left, it)
		}
	}
	if len(left) == 0 {
		return nil, notFound
	}
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.ref()}
	f := Finding{Cause: CauseOrphanedContent, Catalog: "A12", Severity: SeverityBlocker, Object: refPtr(t.ref()),
		Message:  fmt.Sprintf("namespace %s no longer exists but %d object(s) are still stored in it: it was finalized before its content was deleted", t.Name, len(left)),
		FixOwner: "whoever removed the namespace's finalizer; cluster admin",
		Remedy:   fmt.Sprintf("recreate the namespace (kubectl create namespace %s) so normal deletion can run, then delete it again; or delete the objects directly", t.Name),
		Leaks:    "these objects reappear if a namespace with this name is created again"}
	for i, it := range left {
		if i == maxChildren {
			f.Children = append(f.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more not shown", len(left)-maxChildren)})
			break
		}
		ref := it.ref()
		f.Children = append(f.Children, Finding{Cause: CauseOrphanedContent, Catalog: "A12", Severity: SeverityInfo, Object: &ref,
			Message: fmt.Sprintf("%s (finalizers %v)", ref, it.Obj.Finalizers)})
	}
	rep.Findings = []Finding{f}
	rep.RootBlockers = markRoots(rep.Findings)
	rep.Blocked = true
	return rep, nil
}

func (e *explainer) getObject(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	var (
		obj *unstructured.Unstructured
		err error
	)
	if ns != "" {
		obj, err = e.c.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	} else {
		obj, err = e.c.dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("getting %s %s: %w", gvr.Resource, joinNS(ns, name), err)
	}
	return obj, nil
}

func joinNS(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func refOf(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object) ObjectRef {
	return ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Resource: gvr.Resource, Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
}

// objectFindings explains one object: each of its finalizers, and the pod
// checks for pods. depth counts the chain above it.
func (e *explainer) objectFindings(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, depth int) []Finding {
	if obj.GetDeletionTimestamp() == nil {
		return []Finding{{Cause: "NotTerminating", Severity: SeverityInfo, Object: refPtr(refOf(gvr, gvk, obj)),
			Message: fmt.Sprintf("%s is not being deleted", refOf(gvr, gvk, obj))}}
	}
	e.mu.Lock()
	seen := e.visited[obj.GetUID()]
	e.visited[obj.GetUID()] = true
	e.mu.Unlock()
	if seen || depth > maxDepth {
		return []Finding{{Cause: "SeeAbove", Severity: SeverityInfo, Object: refPtr(refOf(gvr, gvk, obj)), Message: "already explained above (cycle or depth limit)"}}
	}
	var out []Finding
	if gvr.Group == "" && gvr.Resource == "pods" {
		out = append(out, e.podFindings(ctx, obj)...)
	}
	for i, f := range obj.GetFinalizers() {
		out = append(out, e.finalizerFinding(ctx, gvr, gvk, obj, i, f, depth))
	}
	return out
}

// finalizerFinding explains one metadata finalizer of a terminating object.
func (e *explainer) finalizerFinding(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, index int, fin string, depth int) Finding {
	ref := refOf(gvr, gvk, obj)
	fd := Finding{Object: &ref, Finalizer: fin, Location: "metadata", Severity: SeverityBlocker}
	for _, p := range record.ReadProgress(obj) {
		if p.Finalizer == fin {
			p := p
			fd.Progress = &p
		}
	}
	entry, inCatalog := lookupCatalog(fin, gvk.Kind)
	if inCatalog {
		fd.Catalog, fd.Remedy, fd.Leaks = entry.Catalog, entry.Remedy, entry.Leaks
	}
	switch {
	case fin == "foregroundDeletion":
		e.foreground(ctx, &fd, gvr, obj, depth)
	case fin == "orphan":
		e.orphan(ctx, &fd, gvr, obj)
	case fin == "kubernetes.io/pvc-protection" && gvk.Kind == "PersistentVolumeClaim":
		e.pvcProtection(ctx, &fd, obj)
	case fin == "kubernetes.io/pv-protection" && gvk.Kind == "PersistentVolume":
		e.pvProtection(ctx, &fd, obj)
	case fin == "customresourcecleanup.apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		e.crdCleanup(ctx, &fd, obj, depth)
	case fin == "kubernetes.io/vac-protection" && gvr.Group == "storage.k8s.io" && gvr.Resource == "volumeattributesclasses":
		e.vacProtection(ctx, &fd, obj)
	case fin == "networking.k8s.io/service-cidr-finalizer" && gvr.Group == "networking.k8s.io" && gvr.Resource == "servicecidrs":
		e.serviceCIDR(ctx, &fd, obj)
	case fin == "batch.kubernetes.io/job-tracking" && gvr.Group == "" && gvr.Resource == "pods":
		e.jobTracking(ctx, &fd, obj)
	case fin == "provisioner.storage.kubernetes.io/cloning-protection" && gvr.Group == "" && gvr.Resource == "persistentvolumeclaims":
		e.ownedFinalizer(ctx, &fd, gvr, gvk, obj, entry, inCatalog)
		e.cloningProtection(ctx, &fd, obj)
	case strings.HasPrefix(fin, "external-attacher/") && gvr.Group == "storage.k8s.io" && gvr.Resource == "volumeattachments",
		strings.HasPrefix(fin, "external-attacher/") && gvr.Group == "" && gvr.Resource == "persistentvolumes":
		e.ownedFinalizer(ctx, &fd, gvr, gvk, obj, entry, inCatalog)
		e.volumeDetach(ctx, &fd, gvr, obj)
	case fin == "resource.kubernetes.io/delete-protection" && gvr.Group == "resource.k8s.io" && gvr.Resource == "resourceclaims":
		e.resourceClaim(ctx, &fd, obj)
	case gvr.Group == "" && gvr.Resource == "nodes":
		e.ownedFinalizer(ctx, &fd, gvr, gvk, obj, entry, inCatalog)
		e.nodeDrain(ctx, &fd, obj)
	case fin == "service.kubernetes.io/load-balancer-cleanup" && gvr.Group == "" && gvr.Resource == "services":
		e.ownedFinalizer(ctx, &fd, gvr, gvk, obj, entry, inCatalog)
		e.loadBalancerCleanup(ctx, &fd, obj)
	default:
		e.ownedFinalizer(ctx, &fd, gvr, gvk, obj, entry, inCatalog)
	}
	// B3: would the API server accept the removal at all?
	if check := e.dryRunRemoval(ctx, gvr, obj, index, fin); check != nil {
		fd.Removal = check
		if !check.Allowed {
			fd.Children = append(fd.Children, Finding{Cause: CauseRemovalRejected, Catalog: "B3", Severity: SeverityBlocker, Object: &ref, Finalizer: fin,
				Message:  "a server-side dry-run of the patch removing this finalizer is rejected: " + check.Error,
				FixOwner: "webhook or policy owner; platform team",
				Remedy:   "fix or exempt the admission webhook or policy named in the error; then the owner (or release) can remove the finalizer",
				Leaks:    "nothing: nobody, including its owner, can remove the finalizer until this is fixed"})
		}
	}
	return fd
}

// ownedFinalizer handles finalizers owned by a controller: find the owner and
// judge whether it is alive.
func (e *explainer) ownedFinalizer(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj metav1.Object, entry catalogEntry, inCatalog bool) {
	owner := e.findOwner(ctx, gvk, obj, fd.Finalizer, entry, inCatalog)
	fd.Owner = owner
	defer e.ownerRBAC(ctx, fd, gvr, obj)
	progress := ""
	if fd.Progress != nil {
		progress = fmt.Sprintf(" (last progress: %s after %d attempts: %s)", fd.Progress.State, fd.Progress.Attempts, fd.Progress.Message)
	}
	switch {
	case owner.Source == SourceNone:
		fd.Cause, fd.Catalog = CauseOrphanFinalizer, "B5"
		fd.Message = fmt.Sprintf("nothing owns %q: no catalog entry, no Teardown policy, no CRD or APIService group for its domain, and it was added by %s", fd.Finalizer, managerOrUnknown(owner.Manager))
		fd.FixOwner = "whoever added it"
		fd.Remedy = fmt.Sprintf("remove it with evidence recorded: kubectl teardown release %s --finalizer %s --reason '...'", targetArg(*fd.Object), fd.Finalizer)
		fd.Leaks = "nothing known: no controller was going to act on it"
	case owner.State == OwnerDown || owner.State == OwnerMissing:
		if owner.Workload != nil && e.namespaceTerminating(ctx, owner.Workload.Namespace) {
			fd.Cause, fd.Catalog = CauseOwnerInTerminatingNamespace, "A8"
			fd.Message = fmt.Sprintf("%s owns %q and runs in namespace %s, which is being deleted: it is gone before it can clean up, and cannot be recreated there", owner.Component, fd.Finalizer, owner.Workload.Namespace)
			fd.FixOwner = "operator vendor (design); cluster admin"
			fd.Remedy = fmt.Sprintf("run %s temporarily from another namespace so it finalizes properly; or do its external cleanup by hand, record it, then release the finalizer", owner.Component)
		} else {
			fd.Cause, fd.Catalog = CauseOwnerGone, "B1"
			fd.Message = fmt.Sprintf("%s owns %q and does not look alive (%s)%s", owner.Component, fd.Finalizer, owner.State, progress)
			fd.FixOwner = "operator or application owner"
			generic := fmt.Sprintf("reinstall or restart %s and let it finalize; release only when it is provably gone and its external cleanup is done or accepted as leaked", owner.Component)
			if fd.Remedy != "" {
				generic += "; or: " + fd.Remedy
			}
			fd.Remedy = generic
		}
		if fd.Leaks == "" {
			fd.Leaks = "whatever " + owner.Component + " cleans up outside this object (unknown to Teardown)"
		}
	case owner.State == OwnerAlive:
		fd.Cause, fd.Catalog = CauseCleanupInProgress, "B2"
		fd.Severity = SeverityWaiting
		if fd.Progress != nil && (fd.Progress.State == record.StateRetry || fd.Progress.DeadlineExceeded) {
			fd.Severity = SeverityBlocker
		}
		fd.Message = fmt.Sprintf("%s owns %q and is running; it removes the finalizer when its cleanup is done%s", owner.Component, fd.Finalizer, progress)
		fd.FixOwner = "application owner / cloud admin"
		if fd.Remedy == "" {
			fd.Remedy = "wait; if it does not progress, read the owner's logs, the object's status and events"
		}
		if fd.Leaks == "" {
			fd.Leaks = "the external resources " + owner.Component + " is cleaning up"
		}
	default:
		fd.Cause, fd.Catalog = CauseOwnerUnknown, "B1"
		if owner.Source == SourceCatalog && entry.BuiltIn {
			fd.Cause, fd.Severity = CauseCleanupInProgress, SeverityWaiting
			fd.Message = fmt.Sprintf("%s owns %q; it runs inside the control plane, whose liveness the API does not show", owner.Component, fd.Finalizer)
			break
		}
		fd.Message = fmt.Sprintf("%s probably owns %q (%s), but no workload running it was found%s", owner.Component, fd.Finalizer, owner.Source, progress)
		fd.FixOwner = "operator owner"
		if fd.Remedy == "" {
			fd.Remedy = fmt.Sprintf("find the controller of %s and check it is running; do not judge it dead from names alone", owner.Component)
		}
	}
}

func managerOrUnknown(m string) string {
	if m == "" {
		return "an unknown client"
	}
	return fmt.Sprintf("%q (a generic client, not a controller)", m)
}

// targetArg renders a ref as a kubectl TYPE/NAME argument (with -n).
func targetArg(r ObjectRef) string {
	typ := strings.ToLower(r.Kind)
	if r.Resource != "" {
		typ = r.Resource
		if g := groupOf(r.APIVersion); g != "" {
			typ += "." + g
		}
	}
	s := typ + "/" + r.Name
	if r.Namespace != "" {
		s += " -n " + r.Namespace
	}
	return s
}

func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

func refPtr[T any](v T) *T { return &v }

// findOwner combines the signals of §3: Teardown policies, the catalog,
// managedFields, CRD and APIService groups; then looks for the workload.
func (e *explainer) findOwner(ctx context.Context, gvk schema.GroupVersionKind, obj metav1.Object, fin string, entry catalogEntry, inCatalog bool) *Owner {
	o := &Owner{Source: SourceNone, State: OwnerUnknown, Manager: finalizerManager(obj, fin)}
	var candidates []string
	for _, p := range e.getPolicies(ctx) {
		if p.Finalizer == fin {
			o.Source = SourcePolicy
			o.Component = fmt.Sprintf("Teardown (%s)", p.Ref)
			o.Evidence = append(o.Evidence, fmt.Sprintf("%s declares finalizer %s with steps %v", p.Ref, fin, p.Steps))
			candidates = append(candidates, "teardown-controller", "teardown")
			break
		}
	}
	if o.Source == SourceNone && inCatalog {
		o.Source, o.Component = SourceCatalog, entry.Component
		o.Evidence = append(o.Evidence, "catalog: "+entry.Component)
		candidates = append(candidates, entry.Workloads...)
		if entry.BuiltIn {
			return o
		}
	}
	if o.Manager != "" && !isGenericManager(o.Manager) {
		if o.Source == SourceNone {
			o.Source, o.Component = SourceManager, o.Manager
		}
		o.Evidence = append(o.Evidence, fmt.Sprintf("managedFields: %q added the finalizer", o.Manager))
		candidates = append(candidates, o.Manager)
	}
	if d := finalizerDomain(fin); d != "" {
		for _, crd := range e.getCRDs(ctx) {
			g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			if groupMatchesDomain(g, d) {
				if o.Source == SourceNone {
					o.Source, o.Component = SourceCRDGroup, "the controller of API group "+g
				}
				o.Evidence = append(o.Evidence, fmt.Sprintf("CRD %s is in group %s, matching the finalizer's domain", crd.GetName(), g))
				break
			}
		}
		for _, s := range e.getAPIServices(ctx) {
			g, _, _ := unstructured.NestedString(s.Object, "spec", "group")
			svc, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
			if svc != "" && groupMatchesDomain(g, d) {
				if o.Source == SourceNone {
					o.Source, o.Component = SourceAPIService, "the aggregated API server of "+g
				}
				o.Evidence = append(o.Evidence, fmt.Sprintf("APIService %s serves group %s", s.GetName(), g))
				break
			}
		}
	}
	if o.Source == SourceNone {
		return o
	}
	if len(candidates) == 0 {
		return o
	}
	w, ok := e.findWorkload(ctx, candidates)
	if !ok {
		// A leader-election Lease tells a running controller from a gone one
		// even when its workload is named differently.
		if l, found := e.findLease(ctx, candidates); found {
			o.Workload = &l.Ref
			// A Lease not renewed within its duration has no leader: the
			// same three states as kube-controller-manager's, by the API
			// server's clock.
			serverNow, _ := e.c.clock.now(e.now)
			age := serverNow.Sub(l.Renewed)
			if age < 0 {
				age = 0
			}
			if l.Renewed.IsZero() || age > l.Duration {
				o.State = OwnerDown
				o.Evidence = append(o.Evidence, fmt.Sprintf("%s (holder %q) was last renewed %s ago, past its %s lease duration: no instance leads", l.Ref, l.Holder, age.Round(time.Second), shortDuration(l.Duration)))
			} else {
				o.State = OwnerAlive
				o.Evidence = append(o.Evidence, fmt.Sprintf("%s is held by %q, renewed %s ago", l.Ref, l.Holder, age.Round(time.Second)))
			}
			return o
		}
		o.State = OwnerMissing
		o.Evidence = append(o.Evidence, fmt.Sprintf("no Deployment, StatefulSet, DaemonSet, pod or Lease named or labelled %s was found", strings.Join(candidates, ", ")))
		return o
	}
	o.Workload = &w.Ref
	if w.ServiceAccount != "" {
		o.ServiceAccount = w.Ref.Namespace + "/" + w.ServiceAccount
	}
	switch {
	case w.Deleting:
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s is being deleted", w.Ref))
	case e.namespaceTerminating(ctx, w.Ref.Namespace):
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s lives in namespace %s, which is being deleted", w.Ref, w.Ref.Namespace))
	case w.Ready == 0:
		o.State = OwnerDown
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s has 0 of %d replicas ready", w.Ref, w.Desired))
	default:
		o.State = OwnerAlive
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s has %d of %d replicas ready", w.Ref, w.Ready, w.Desired))
	}
	return o
}

// finalizerManager returns the managedFields manager that owns the
// finalizer's entry, preferring controllers over generic clients.
func finalizerManager(obj metav1.Object, fin string) string {
	key, _ := json.Marshal(fin)
	needle := fmt.Sprintf(`"v:%s"`, strings.ReplaceAll(string(key), `"`, `\"`))
	var generic string
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil || !strings.Contains(string(mf.FieldsV1.Raw), needle) {
			continue
		}
		if !isGenericManager(mf.Manager) {
			return mf.Manager
		}
		if generic == "" {
			generic = mf.Manager
		}
	}
	return generic
}

func (e *explainer) namespaceTerminating(ctx context.Context, ns string) bool {
	n := e.getNamespace(ctx, ns)
	return n != nil && n.DeletionTimestamp != nil
}

func (e *explainer) getNamespace(ctx context.Context, ns string) *corev1.Namespace {
	if ns == "" {
		return nil
	}
	e.mu.Lock()
	n, ok := e.nsCache[ns]
	e.mu.Unlock()
	if ok {
		return n
	}
	got, err := e.c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		got = nil
	}
	e.mu.Lock()
	e.nsCache[ns] = got
	e.mu.Unlock()
	return got
}

func (e *explainer) doOnce(key string, fn func()) {
	e.mu.Lock()
	if e.once == nil {
		e.once = map[string]*sync.Once{}
	}
	o, ok := e.once[key]
	if !ok {
		o = &sync.Once{}
		e.once[key] = o
	}
	e.mu.Unlock()
	o.Do(fn)
}

func (e *explainer) getCRDs(ctx context.Context) []unstructured.Unstructured {
	e.doOnce("crds", func() {
		if l, err := e.c.dyn.Resource(gvrCRD).List(ctx, metav1.ListOptions{}); err == nil {
			e.crds = l.Items
		}
	})
	return e.crds
}

func (e *explainer) getAPIServices(ctx context.Context) []unstructured.Unstructured {
	e.doOnce("apiservices", func() {
		if l, err := e.c.dyn.Resource(gvrAPIService).List(ctx, metav1.ListOptions{}); err == nil {
			e.apiSvcs = l.Items
		}
	})
	return e.apiSvcs
}

func (e *explainer) getResources() []apiResource {
	e.doOnce("resources", func() { e.resources, _ = e.c.resources() })
	return e.resources
}

func (e *explainer) getPolicies(ctx context.Context) []policyInfo {
	e.doOnce("policies", func() {
		for _, gvr := range []schema.GroupVersionResource{gvrPolicy, gvrClusterPolicy} {
			l, err := e.c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range l.Items {
				fin, _, _ := unstructured.NestedString(p.Object, "spec", "finalizer")
				if fin == "" {
					fin, _, _ = unstructured.NestedString(p.Object, "status", "finalizer")
				}
				steps, _, _ := unstructured.NestedSlice(p.Object, "spec", "steps")
				var names []string
				for _, s := range steps {
					if m, ok := s.(map[string]any); ok {
						if n, ok := m["name"].(string); ok {
							names = append(names, n)
						}
					}
				}
				e.policies = append(e.policies, policyInfo{
					Ref:       ObjectRef{APIVersion: p.GetAPIVersion(), Kind: p.GetKind(), Resource: gvr.Resource, Namespace: p.GetNamespace(), Name: p.GetName()},
					Finalizer: fin, Steps: names,
				})
			}
		}
	})
	return e.policies
}

// findWorkload finds a Deployment, StatefulSet, DaemonSet or bare pod named
// after, or labelled (app.kubernetes.io/name, app) with, a candidate.
func (e *explainer) findWorkload(ctx context.Context, candidates []string) (workload, bool) {
	e.doOnce("workloads", func() {
		apps := e.c.kube.AppsV1()
		if l, err := apps.Deployments("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, d := range l.Items {
				e.workloads = append(e.workloads, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Resource: "deployments", Namespace: d.Namespace, Name: d.Name},
					Labels: d.Labels, Ready: d.Status.AvailableReplicas, Desired: replicas(d.Spec.Replicas), Deleting: d.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&d.Spec.Template.Spec), Containers: containersOf(&d.Spec.Template.Spec)})
			}
		}
		if l, err := apps.StatefulSets("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, s := range l.Items {
				e.workloads = append(e.workloads, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Resource: "statefulsets", Namespace: s.Namespace, Name: s.Name},
					Labels: s.Labels, Ready: s.Status.ReadyReplicas, Desired: replicas(s.Spec.Replicas), Deleting: s.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&s.Spec.Template.Spec), Containers: containersOf(&s.Spec.Template.Spec)})
			}
		}
		if l, err := apps.DaemonSets("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, d := range l.Items {
				e.workloads = append(e.workloads, workload{Ref: ObjectRef{APIVersion: "apps/v1", Kind: "DaemonSet", Resource: "daemonsets", Namespace: d.Namespace, Name: d.Name},
					Labels: d.Labels, Ready: d.Status.NumberAvailable, Desired: d.Status.DesiredNumberScheduled, Deleting: d.DeletionTimestamp != nil,
					ServiceAccount: serviceAccountOf(&d.Spec.Template.Spec), Containers: containersOf(&d.Spec.Template.Spec)})
			}
		}
	})
	var best *workload
	for i := range e.workloads {
		w := &e.workloads[i]
		if !workloadMatches(w.Ref.Name, w.Labels, candidates) && !containsAny(w.Containers, candidates) {
			continue
		}
		if best == nil || (best.Ready == 0 && w.Ready > 0) {
			best = w
		}
	}
	if best != nil {
		return *best, true
	}
	// Bare pods (an operator run as a pod, or pods of a deleted Deployment).
	for _, c := range candidates {
		for _, key := range []string{"app.kubernetes.io/name", "app"} {
			l, err := e.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: key + "=" + c})
			if err != nil || len(l.Items) == 0 {
				continue
			}
			p := l.Items[0]
			ready := int32(0)
			if podReady(&p) && p.DeletionTimestamp == nil {
				ready = 1
			}
			return workload{Ref: ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: p.Namespace, Name: p.Name}, Labels: p.Labels, Ready: ready, Desired: 1, Deleting: p.DeletionTimestamp != nil,
				ServiceAccount: serviceAccountOf(&p.Spec)}, true
		}
	}
	return workload{}, false
}

type leaseInfo struct {
	Ref      ObjectRef
	Holder   string
	Renewed  time.Time
	Duration time.Duration
}

// findLease finds a coordination.k8s.io Lease named after a candidate, or
// held by an identity that starts with one.
func (e *explainer) findLease(ctx context.Context, candidates []string) (leaseInfo, bool) {
	l, err := e.c.kube.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return leaseInfo{}, false
	}
	for _, le := range l.Items {
		holder := ""
		if le.Spec.HolderIdentity != nil {
			holder = *le.Spec.HolderIdentity
		}
		for _, c := range candidates {
			if c == "" || (le.Name != c && !strings.HasPrefix(le.Name, c+"-") && !strings.HasPrefix(holder, c)) {
				continue
			}
			info := leaseInfo{Ref: ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases", Namespace: le.Namespace, Name: le.Name}, Holder: holder, Duration: 15 * time.Second}
			if le.Spec.RenewTime != nil {
				info.Renewed = le.Spec.RenewTime.Time
			}
			if le.Spec.LeaseDurationSeconds != nil {
				info.Duration = time.Duration(*le.Spec.LeaseDurationSeconds) * time.Second
			}
			return info, true
		}
	}
	return leaseInfo{}, false
}

func containsAny(list, candidates []string) bool {
	for _, c := range candidates {
		if c != "" && containsString(list, c) {
			return true
		}
	}
	return false
}

// workloadMatches is the name/label rule of findWorkload.
func workloadMatches(name string, labels map[string]string, candidates []string) bool {
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if name == c || labels["app.kubernetes.io/name"] == c || labels["app"] == c {
			return true
		}
	}
	return false
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// removalPatch is the test-guarded JSON patch that removes the finalizer at
// index i, exactly what release applies.
func removalPatch(index int, fin string) ([]byte, error) {
	return json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", index), "value": fin},
		{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", index)},
	})
}

// dryRunRemoval sends the removal patch with dryRun=All. Nil when the check
// could not be made (no permission to patch, object gone).
func (e *explainer) dryRunRemoval(ctx context.Context, gvr schema.GroupVersionResource, obj metav1.Object, index int, fin string) *RemovalCheck {
	patch, err := removalPatch(index, fin)
	if err != nil {
		return nil
	}
	opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	r := e.c.dyn.Resource(gvr)
	if obj.GetNamespace() != "" {
		_, err = r.Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.JSONPatchType, patch, opts)
	} else {
		_, err = r.Patch(ctx, obj.GetName(), types.JSONPatchType, patch, opts)
	}
	switch {
	case err == nil:
		return &RemovalCheck{Allowed: true}
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "admission webhook"), apierrors.IsConflict(err), apierrors.IsInvalid(err) && strings.Contains(err.Error(), "test operation"):
		return nil
	case strings.Contains(err.Error(), "does not support dry run"):
		return &RemovalCheck{Allowed: true, Error: "not checked: " + err.Error()}
	default:
		return &RemovalCheck{Allowed: false, Error: err.Error()}
	}
}

// dependents returns the objects whose ownerReferences name uid, found with
// metadata-only lists in ns ("" for everywhere).
func (e *explainer) dependents(ctx context.Context, ns string, uid types.UID) []metaItem {
	items := e.scope(ctx, ns)
	var out []metaItem
	for _, it := range items {
		for _, r := range it.Obj.OwnerReferences {
			if r.UID == uid {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

// scope lists every object in ns ("" for the whole cluster) once per run;
// chains ask for the same namespace again and again.
func (e *explainer) scope(ctx context.Context, ns string) []metaItem {
	e.doOnce("scope/"+ns, func() {
		items, _ := e.c.listMeta(ctx, e.getResources(), ns, "", 8)
		e.mu.Lock()
		if e.scopes == nil {
			e.scopes = map[string][]metaItem{}
		}
		e.scopes[ns] = items
		e.mu.Unlock()
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scopes[ns]
}

// foreground: E1/E2.
func (e *explainer) foreground(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object, depth int) {
	fd.Owner = &Owner{Component: "garbage collector (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	var blocking []metaItem
	for _, d := range e.dependents(ctx, obj.GetNamespace(), obj.GetUID()) {
		for _, r := range d.Obj.OwnerReferences {
			if r.UID == obj.GetUID() && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
				blocking = append(blocking, d)
				break
			}
		}
	}
	if len(blocking) > 0 && e.gcNeverDeleted(ctx, fd, obj, blocking) {
		return
	}
	if len(blocking) > 0 {
		fd.Cause, fd.Catalog = CauseForegroundDependents, "E1"
		fd.Message = fmt.Sprintf("foreground deletion waits for %d dependent(s) with blockOwnerDeletion=true", len(blocking))
		fd.FixOwner = "the root blocker's owner"
		for i, d := range blocking {
			if i == maxChildren {
				fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more dependents not shown", len(blocking)-maxChildren)})
				break
			}
			fd.Children = append(fd.Children, e.dependentNode(ctx, d, depth+1))
		}
		if kcm := e.kcmLiveness(ctx); kcm.stopped() {
			// Even once the dependents go, nothing removes the finalizer.
			fd.Owner.State, fd.Owner.Evidence = kcm.ownerState(), []string{kcm.Evidence}
			fd.Children = append(fd.Children, Finding{Cause: CauseGCIdle, Catalog: "E2", Severity: SeverityBlocker, Object: fd.Object, Finalizer: fd.Finalizer,
				Message:  "the garbage collector deletes the dependents and then removes foregroundDeletion, but " + kcm.why() + "; until it is back the garbage collector removes no foregroundDeletion or orphan finalizer",
				FixOwner: "cluster operator",
				Remedy:   "bring kube-controller-manager back: " + kcmCheck,
				Leaks:    "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner"})
		}
		return
	}
	e.gcIdle(ctx, fd, obj, "no dependent with blockOwnerDeletion=true remains")
}

func (e *explainer) gcIdle(ctx context.Context, fd *Finding, obj metav1.Object, why string) {
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Cause, fd.Catalog = CauseGCIdle, "E2"
	fd.Message = fmt.Sprintf("%s; the garbage collector should remove %q (deleting for %s)", why, fd.Finalizer, age(since))
	fd.FixOwner = "cluster operator"
	fd.Remedy = "check kube-controller-manager and CRDs with broken conversion webhooks; removing the finalizer is low-risk once nothing depends on it"
	fd.Leaks = "nothing: the garbage collector finalizers only gate dependents"
	fd.Severity = SeverityWaiting
	if e.gcStalled(ctx, fd, obj) {
		fd.Severity = SeverityBlocker
		fd.Message += ": it is not progressing (" + e.gcStallEvidence(ctx) + ")"
		if e.kcmLiveness(ctx).stopped() {
			fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then removes the finalizer. Removing the finalizer yourself is low-risk once nothing depends on it"
		}
	}
}

// gcStalled says whether the garbage collector had time enough to act on
// obj's deletion: longer ago than --gc-stall-after, or at once when
// kube-controller-manager's Lease is stale. A readable Lease becomes the
// evidence of fd's owner.
func (e *explainer) gcStalled(ctx context.Context, fd *Finding, obj metav1.Object) bool {
	kcm := e.kcmLiveness(ctx)
	if state := kcm.ownerState(); state != OwnerUnknown && fd != nil && fd.Owner != nil {
		fd.Owner.State, fd.Owner.Evidence = state, []string{kcm.Evidence}
	}
	return e.now.Sub(obj.GetDeletionTimestamp().Time) > e.gcStallAfter || kcm.stopped()
}

// gcStallEvidence says why gcStalled judged the garbage collector stuck.
func (e *explainer) gcStallEvidence(ctx context.Context) string {
	if kcm := e.kcmLiveness(ctx); kcm.stopped() {
		return kcm.why() + "; until it is back the garbage collector removes no foregroundDeletion or orphan finalizer"
	}
	return fmt.Sprintf("longer than the %s it is given, --gc-stall-after", e.gcStallAfter)
}

// gcNeverDeleted: E2 for a foreground owner whose blocking dependents the
// garbage collector has not even started deleting. It deletes every
// dependent of an owner marked foregroundDeletion within seconds, so none of
// them terminating once the owner has been deleting for longer than
// --gc-stall-after (or with kube-controller-manager's Lease stale) means it
// is not running (left out of --controllers, kube-controller-manager down)
// or not progressing (informers not synced). It reports false, leaving fd
// alone, when that is not the case: the dependents are then E1's.
func (e *explainer) gcNeverDeleted(ctx context.Context, fd *Finding, obj metav1.Object, blocking []metaItem) bool {
	for _, d := range blocking {
		if d.Obj.DeletionTimestamp != nil {
			return false
		}
	}
	if !e.gcStalled(ctx, nil, obj) {
		return false
	}
	e.gcStalled(ctx, fd, obj)
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Cause, fd.Catalog = CauseGCIdle, "E2"
	fd.Severity = SeverityBlocker
	fd.Message = fmt.Sprintf("foreground deletion waits for %d dependent(s) with blockOwnerDeletion=true, but the garbage collector has deleted none of them in %s (%s); it deletes them within seconds of a foreground deletion, so it is not running or not progressing",
		len(blocking), age(since), e.gcStallEvidence(ctx))
	fd.FixOwner = "cluster operator"
	fd.Remedy = "run kube-controller-manager with the garbage collector (check its --controllers flag, and its log for informers that do not sync, such as CRDs with broken conversion webhooks); it then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	if e.kcmLiveness(ctx).stopped() {
		fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then deletes the dependents and removes the finalizer. Without it nothing removes the finalizer: delete the dependents yourself, then remove foregroundDeletion, which is low-risk once nothing depends on the owner"
	}
	fd.Leaks = "nothing yet; removing the finalizer now would leave the dependents behind with an ownerReference to a deleted owner, for a garbage collector to delete later"
	for i, d := range blocking {
		if i == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more dependents not shown", len(blocking)-maxChildren)})
			break
		}
		ref := d.ref()
		fd.Children = append(fd.Children, Finding{Cause: "BlockingDependent", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("%s is not deleted: the garbage collector has not acted on it", ref)})
	}
	return true
}

// dependentNode explains one dependent an owner waits on.
func (e *explainer) dependentNode(ctx context.Context, d metaItem, depth int) Finding {
	ref := d.ref()
	gvk := d.Res.GVR.GroupVersion().WithKind(d.Res.Kind)
	n := Finding{Cause: "BlockingDependent", Severity: SeverityBlocker, Object: &ref}
	if d.Obj.DeletionTimestamp == nil {
		n.Severity = SeverityWaiting
		n.Message = fmt.Sprintf("%s is not deleted yet; the garbage collector deletes it next", ref)
		return n
	}
	n.Message = fmt.Sprintf("%s is terminating with finalizers %v", ref, d.Obj.Finalizers)
	n.Children = e.objectFindings(ctx, d.Res.GVR, gvk, &d.Obj, depth)
	if len(n.Children) == 0 {
		n.Severity = SeverityWaiting
	}
	return n
}

// orphan: E3.
func (e *explainer) orphan(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	fd.Owner = &Owner{Component: "garbage collector (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	deps := e.dependents(ctx, obj.GetNamespace(), obj.GetUID())
	if len(deps) == 0 {
		e.gcIdle(ctx, fd, obj, "no dependent still references it")
		return
	}
	fd.Cause, fd.Catalog = "OrphaningDependents", "E3"
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("the garbage collector must remove the ownerReference from %d dependent(s) first", len(deps))
	for i, d := range deps {
		if i == maxChildren {
			break
		}
		ref := d.ref()
		idx := -1
		for j, r := range d.Obj.OwnerReferences {
			if r.UID == obj.GetUID() {
				idx = j
			}
		}
		patch, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/metadata/ownerReferences/%d/uid", idx), "value": string(obj.GetUID())},
			{"op": "remove", "path": fmt.Sprintf("/metadata/ownerReferences/%d", idx)},
		})
		var err error
		opts := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
		if ref.Namespace != "" {
			_, err = e.c.dyn.Resource(d.Res.GVR).Namespace(ref.Namespace).Patch(ctx, ref.Name, types.JSONPatchType, patch, opts)
		} else {
			_, err = e.c.dyn.Resource(d.Res.GVR).Patch(ctx, ref.Name, types.JSONPatchType, patch, opts)
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			fd.Severity = SeverityBlocker
			fd.Cause = CauseOrphanDependentUnpatchable
			fd.Children = append(fd.Children, Finding{Cause: CauseOrphanDependentUnpatchable, Catalog: "E3", Severity: SeverityBlocker, Object: &ref,
				Message:  "a dry-run of the patch removing its ownerReference is rejected: " + err.Error(),
				FixOwner: "webhook owner",
				Remedy:   "fix the webhook; or remove the ownerReference yourself (that is what orphaning does), then the garbage collector drops orphan",
				Leaks:    "nothing: orphaning keeps the dependents"})
		}
	}
	if fd.Severity == SeverityWaiting && e.gcStalled(ctx, nil, obj) {
		e.gcIdle(ctx, fd, obj, fmt.Sprintf("%d dependents still reference it although they can be patched", len(deps)))
		fd.Remedy = "fix kube-controller-manager's garbage collector (its --controllers flag; CRDs with broken conversion webhooks); without it, remove the ownerReference from the dependents yourself (that is what orphaning does), then remove orphan"
		if e.kcmLiveness(ctx).stopped() {
			fd.Remedy = "bring kube-controller-manager back: " + kcmCheck + "; its garbage collector then orphans the dependents and removes the finalizer. Without it, remove the ownerReference from the dependents yourself (that is what orphaning does), then remove orphan"
		}
		fd.Leaks = "nothing once the dependents no longer reference it; removing orphan first lets a garbage collector delete the dependents later, which orphaning was meant to prevent"
	}
}

// pvcProtection: C1.
func (e *explainer) pvcProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Owner = &Owner{Component: "pvc-protection controller (kube-controller-manager)", Source: SourceCatalog, State: OwnerUnknown}
	pods, err := e.c.kube.CoreV1().Pods(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		fd.Cause, fd.Message = CausePVCInUse, "could not list pods: "+err.Error()
		return
	}
	fd.Cause = CausePVCInUse
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == obj.GetName() {
				fd.Children = append(fd.Children, Finding{Cause: CausePVCInUse, Catalog: "C1", Severity: SeverityBlocker,
					Object:  &ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: p.Namespace, Name: p.Name},
					Message: fmt.Sprintf("pod %s (phase %s, node %s) uses the claim", p.Name, p.Status.Phase, p.Spec.NodeName),
					Remedy:  "delete or finish the pod (Completed and Failed pods count too)"})
			}
		}
	}
	fd.Message = fmt.Sprintf("%d scheduled pod(s) use the claim", len(fd.Children))
	if len(fd.Children) == 0 {
		fd.Severity = SeverityWaiting
		fd.Message = "no scheduled pod uses the claim; the pvc-protection controller should remove the finalizer"
	}
}

// pvProtection: C2.
func (e *explainer) pvProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause = CausePVBound
	pv, err := e.c.kube.CoreV1().PersistentVolumes().Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		fd.Message = "could not read the PersistentVolume: " + err.Error()
		return
	}
	if pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef != nil {
		fd.Message = fmt.Sprintf("the volume is Bound to claim %s/%s", pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
		return
	}
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("the volume is %s; the pv-protection controller should remove the finalizer", pv.Status.Phase)
}

// crdCleanup: C9.
func (e *explainer) crdCleanup(ctx context.Context, fd *Finding, obj metav1.Object, depth int) {
	fd.Owner = &Owner{Component: "CRD finalizer (kube-apiserver)", Source: SourceCatalog, State: OwnerAlive}
	fd.Cause = CauseCRDInstancesRemain
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	condMsg := ""
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Terminating" {
			condMsg = fmt.Sprintf(" (condition Terminating=%v %v: %v)", m["status"], m["reason"], m["message"])
		}
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(u.Object, "spec", "scope")
	version := ""
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if s, _ := m["storage"].(bool); s {
			version, _ = m["name"].(string)
		}
	}
	res := apiResource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, Kind: kind, Namespaced: scope == "Namespaced"}
	items, errs := e.c.listMeta(ctx, []apiResource{res}, "", "", 1)
	if len(errs) > 0 {
		fd.Message = fmt.Sprintf("the custom resources cannot be listed: %v%s", errs[0], condMsg)
		return
	}
	if len(items) == 0 {
		fd.Severity = SeverityWaiting
		fd.Message = "no custom resource remains; kube-apiserver removes the finalizer within a minute" + condMsg
		return
	}
	fd.Message = fmt.Sprintf("%d %s remain; kube-apiserver removes the finalizer only once all are gone%s", len(items), plural, condMsg)
	fd.FixOwner = "the owner of the custom resources' finalizers"
	fd.Leaks = fmt.Sprintf("the %d remaining %s stay in etcd and come back when the CRD is reinstalled", len(items), plural)
	for i, it := range items {
		if i == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: fmt.Sprintf("%d more not shown", len(items)-maxChildren)})
			break
		}
		fd.Children = append(fd.Children, e.dependentNode(ctx, it, depth+1))
	}
}

// podFindings: D1–D3.
func (e *explainer) podFindings(ctx context.Context, obj metav1.Object) []Finding {
	pod, err := e.c.kube.CoreV1().Pods(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil || pod.DeletionTimestamp == nil {
		return nil
	}
	// A finished pod, or one deleted with grace 0 (by its kubelet, or
	// forced), waits on nobody but its finalizers: the API server removes it
	// as soon as they are gone.
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		(pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0) {
		return nil
	}
	ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	if e.now.Before(pod.DeletionTimestamp.Time) {
		return []Finding{{Cause: CausePodInGracePeriod, Catalog: "D1", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("still inside its grace period: %s left", age(pod.DeletionTimestamp.Sub(e.now))), Remedy: "wait"}}
	}
	past := age(e.now.Sub(pod.DeletionTimestamp.Time))
	if pod.Spec.NodeName == "" {
		return nil
	}
	node, err := e.c.kube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return []Finding{{Cause: CausePodOnMissingNode, Catalog: "D2", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("past its grace period by %s on node %s, which no longer exists", past, pod.Spec.NodeName),
			FixOwner: "cluster operator", Remedy: "the pod garbage collector (kube-controller-manager) removes pods of deleted nodes; check it runs, or force-delete the pod (kubectl delete pod --grace-period=0 --force)"}}
	}
	if err != nil {
		return nil
	}
	ready := corev1.ConditionUnknown
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status
		}
	}
	if ready != corev1.ConditionTrue {
		warn := ""
		for _, r := range pod.OwnerReferences {
			if r.Kind == "StatefulSet" {
				warn = " Force-deleting a StatefulSet pod risks two pods with the same identity."
			}
		}
		return []Finding{{Cause: CausePodOnNotReadyNode, Catalog: "D2", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("past its grace period by %s; node %s is Ready=%s, so no kubelet confirms the pod stopped", past, node.Name, ready),
			FixOwner: "node or infrastructure owner",
			Remedy:   fmt.Sprintf("recover the node; if it is confirmed dead, taint it: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute (or delete the Node object); last resort: kubectl delete pod --grace-period=0 --force.%s", node.Name, warn),
			Leaks:    "volumes may stay attached to the dead node until it is tainted out-of-service"}}
	}
	return []Finding{{Cause: CausePodNotKilled, Catalog: "D3", Severity: SeverityBlocker, Object: &ref,
		Message:  fmt.Sprintf("past its grace period by %s on Ready node %s: the kubelet cannot stop it (runtime or volume teardown)", past, node.Name),
		FixOwner: "node or storage owner", Remedy: "read the pod's events and the kubelet's logs on the node; a forced delete only hides the problem"}}
}

// ownerRefFindings: E4 for the target.
func (e *explainer) ownerRefFindings(ctx context.Context, t target, obj metav1.Object) []Finding {
	var out []Finding
	ref := t.ref()
	for _, or := range obj.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(or.APIVersion)
		owner := fmt.Sprintf("%s %s (uid %s)", or.Kind, or.Name, or.UID)
		var mapping *metaMapping
		if err == nil {
			mapping = e.mapKind(gv.WithKind(or.Kind))
		}
		if mapping == nil {
			out = append(out, Finding{Cause: CauseInvalidOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
				Message:  fmt.Sprintf("ownerReference to %s: the kind %s is not served, so the garbage collector retries this object forever and never collects it", owner, or.APIVersion),
				FixOwner: "controller author", Remedy: "remove or fix the ownerReference"})
			continue
		}
		if mapping.namespaced && !t.Namespaced {
			out = append(out, Finding{Cause: CauseInvalidOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
				Message:  fmt.Sprintf("ownerReference to namespaced %s from a cluster-scoped object: the garbage collector never collects it", owner),
				FixOwner: "controller author", Remedy: "remove the ownerReference; clean the object up explicitly"})
			continue
		}
		ns := ""
		if mapping.namespaced {
			ns = obj.GetNamespace()
		}
		var got *metav1.PartialObjectMetadata
		if ns != "" {
			got, err = e.c.meta.Resource(mapping.gvr).Namespace(ns).Get(ctx, or.Name, metav1.GetOptions{})
		} else {
			got, err = e.c.meta.Resource(mapping.gvr).Get(ctx, or.Name, metav1.GetOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err == nil && got.UID == or.UID {
			continue
		}
		if mapping.namespaced {
			if other := e.findByUID(ctx, mapping, or.UID); other != "" {
				out = append(out, Finding{Cause: CauseCrossNamespaceOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
					Message:  fmt.Sprintf("ownerReference to %s, which lives in namespace %s: owners must be in the same namespace, so the garbage collector treats it as absent and deletes this object (event OwnerRefInvalidNamespace)", owner, other),
					FixOwner: "controller author", Remedy: "owner references cannot cross namespaces: use a label or annotation link and explicit cleanup instead"})
				continue
			}
		}
		why := "does not exist"
		if err == nil {
			why = fmt.Sprintf("exists with a different uid (%s)", got.UID)
		}
		out = append(out, Finding{Cause: CauseDanglingOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
			Message:  fmt.Sprintf("ownerReference to %s, which %s: the garbage collector treats it as absent and deletes this object if no other owner remains", owner, why),
			FixOwner: "controller author", Remedy: "remove the ownerReference if the object must survive; otherwise expect it to be collected"})
	}
	return out
}

type metaMapping struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

func (e *explainer) mapKind(gvk schema.GroupVersionKind) *metaMapping {
	m, err := e.c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil
	}
	return &metaMapping{gvr: m.Resource, namespaced: m.Scope.Name() == "namespace"}
}

func (e *explainer) findByUID(ctx context.Context, m *metaMapping, uid types.UID) string {
	l, err := e.c.meta.Resource(m.gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, it := range l.Items {
		if it.UID == uid {
			return it.Namespace
		}
	}
	return ""
}

// webhooksByName indexes every admission webhook.
type webhookInfo struct {
	Config        string
	Kind          string
	Name          string
	FailurePolicy string
	Operations    []string
	Service       *admissionregistrationv1.ServiceReference
	URL           string
}

func (e *explainer) webhooks(ctx context.Context) []webhookInfo {
	var out []webhookInfo
	ops := func(rules []admissionregistrationv1.RuleWithOperations) []string {
		var o []string
		for _, r := range rules {
			for _, op := range r.Operations {
				o = append(o, string(op))
			}
		}
		return o
	}
	fp := func(p *admissionregistrationv1.FailurePolicyType) string {
		if p == nil {
			return string(admissionregistrationv1.Fail)
		}
		return string(*p)
	}
	url := func(u *string) string {
		if u == nil {
			return ""
		}
		return *u
	}
	if l, err := e.c.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range l.Items {
			for _, w := range c.Webhooks {
				out = append(out, webhookInfo{Config: c.Name, Kind: "ValidatingWebhookConfiguration", Name: w.Name, FailurePolicy: fp(w.FailurePolicy), Operations: ops(w.Rules), Service: w.ClientConfig.Service, URL: url(w.ClientConfig.URL)})
			}
		}
	}
	if l, err := e.c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range l.Items {
			for _, w := range c.Webhooks {
				out = append(out, webhookInfo{Config: c.Name, Kind: "MutatingWebhookConfiguration", Name: w.Name, FailurePolicy: fp(w.FailurePolicy), Operations: ops(w.Rules), Service: w.ClientConfig.Service, URL: url(w.ClientConfig.URL)})
			}
		}
	}
	return out
}

// serviceBackend describes whether a Service has ready endpoints.
func (e *explainer) serviceBackend(ctx context.Context, ns, name string) (string, bool) {
	if _, err := e.c.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Service %s/%s does not exist", ns, name), false
		}
		return "", true
	}
	slices, err := e.c.kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + name})
	if err != nil {
		return "", true
	}
	ready := 0
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready++
			}
		}
	}
	if ready == 0 {
		return fmt.Sprintf("Service %s/%s has no ready endpoints", ns, name), false
	}
	return fmt.Sprintf("Service %s/%s has %d ready endpoint(s)", ns, name, ready), true
}

// sortFindings orders findings by severity, then cause, then object.
func sortFindings(fs []Finding) {
	rank := map[string]int{SeverityBlocker: 0, SeverityWaiting: 1, SeverityWarning: 2, SeverityInfo: 3}
	sort.SliceStable(fs, func(i, j int) bool { return rank[fs[i].Severity] < rank[fs[j].Severity] })
}

var _ = appsv1.SchemeGroupVersion
