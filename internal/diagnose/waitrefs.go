/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// reference is an object the target names: in its spec or status (Cluster
// API's infrastructureRef, Crossplane's resourceRefs), or in a GitOps
// app's list of what it manages (Argo CD's status.resources, Flux's
// status.inventory.entries).
type reference struct {
	GK        schema.GroupKind
	Version   string
	Namespace string
	Name      string
	// Path is where the target names it (spec.infrastructureRef).
	Path string
	// Managed is true for an entry of a list of what the target manages:
	// its owner deletes it, and waits for it to go, even when it is not
	// being deleted yet. A spec reference is only waited on once it is
	// being deleted.
	Managed bool
}

// maxRefWalk bounds how deep references are looked for in spec and status.
const maxRefWalk = 6

// referencedObjects: the objects the target references that still exist.
// Each one being deleted is explained in turn (its own finalizers, its own
// owner's words), so that a chain ends at its root blocker.
func (e *Explainer) referencedObjects(ctx context.Context, s subject) []Finding {
	u := e.fullObject(ctx, s)
	if u == nil {
		return nil
	}
	refs := referencesOf(u)
	var out []Finding
	for i, r := range refs {
		// A GitOps app can list hundreds: read a bounded number of them.
		if len(out) >= maxChildren || i >= 4*maxChildren {
			break
		}
		if r.GK.Kind == s.GVK.Kind && r.GK.Group == s.GVK.Group && r.Name == s.Obj.GetName() {
			continue
		}
		m := e.mapRef(r)
		if m == nil {
			continue
		}
		ns := ""
		if m.Namespaced {
			ns = r.Namespace
			if ns == "" {
				ns = s.Obj.GetNamespace()
			}
		}
		obj, err := e.c.GetObject(ctx, m.GVR, ns, r.Name)
		if apierrors.IsNotFound(err) {
			continue // gone: nothing to wait on
		}
		gvk := m.GVR.GroupVersion().WithKind(r.GK.Kind)
		ref := ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: r.GK.Kind, Resource: m.GVR.Resource, Namespace: ns, Name: r.Name}
		if err != nil {
			out = append(out, Finding{Cause: CauseWaitsOnObject, Catalog: "B6", Severity: SeverityInfo, Object: &ref,
				Message: fmt.Sprintf("the target names %s in %s, which could not be read: %v", ref, r.Path, err)})
			continue
		}
		ref.UID = string(obj.GetUID())
		if obj.GetDeletionTimestamp() == nil {
			if !r.Managed {
				continue
			}
			out = append(out, Finding{Cause: CauseWaitsOnObject, Catalog: "B6", Severity: SeverityWaiting, Object: &ref,
				Message: fmt.Sprintf("%s, listed in %s, still exists and is not being deleted yet; the owner deletes what it manages and waits for it to go", ref, r.Path)})
			continue
		}
		fd := Finding{Cause: CauseWaitsOnObject, Catalog: "B6", Severity: SeverityWaiting, Object: &ref,
			Message: fmt.Sprintf("%s, named in %s, is being deleted (for %s) and still has finalizers %v; the owner waits for it to go",
				ref, r.Path, Age(e.now.Sub(obj.GetDeletionTimestamp().Time)), obj.GetFinalizers()),
			Children: e.objectFindings(ctx, m.GVR, gvk, obj, s.Depth+1)}
		out = append(out, fd)
	}
	return out
}

// mapRef maps a reference's kind to its resource, at its version when it
// has one.
func (e *Explainer) mapRef(r reference) *kube.Mapping {
	var versions []string
	if r.Version != "" {
		versions = append(versions, r.Version)
	}
	m, err := e.c.Mapper().RESTMapping(r.GK, versions...)
	if err != nil {
		return nil
	}
	return &kube.Mapping{GVR: m.Resource, Namespaced: m.Scope.Name() == "namespace"}
}

// referencesOf finds the references in u's spec and status: any object
// with a kind and a name, and an apiVersion or a version (Argo CD's
// status.resources entries carry group and version); and Flux's inventory
// entries, whose id is "namespace_name_group_kind".
func referencesOf(u *unstructured.Unstructured) []reference {
	var out []reference
	seen := map[string]int{}
	add := func(r reference) {
		key := r.GK.String() + "/" + r.Namespace + "/" + r.Name
		if r.Name == "" || r.GK.Kind == "" {
			return
		}
		if i, ok := seen[key]; ok {
			// Listed as managed anywhere (Argo CD's status.resources beside
			// its operationState), it is waited on as managed.
			if r.Managed && !out[i].Managed {
				out[i] = r
			}
			return
		}
		seen[key] = len(out)
		out = append(out, r)
	}
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		if depth > maxRefWalk {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if r, ok := refFromMap(x); ok {
				r.Path = path
				r.Managed = managedList(path)
				add(r)
			}
			// In key order: the same object, the same report.
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], path+"."+k, depth+1)
			}
		case []any:
			for _, child := range x {
				walk(child, path+"[]", depth+1)
			}
		}
	}
	for _, top := range []string{"spec", "status"} {
		if v, ok := u.Object[top]; ok {
			walk(v, top, 0)
		}
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	for _, raw := range entries {
		ent, _ := raw.(map[string]any)
		id, _ := ent["id"].(string)
		v, _ := ent["v"].(string)
		if parts := strings.Split(id, "_"); len(parts) == 4 {
			add(reference{GK: schema.GroupKind{Group: parts[2], Kind: parts[3]}, Version: v, Namespace: parts[0], Name: parts[1],
				Path: "status.inventory.entries", Managed: true})
		}
	}
	return out
}

// refFromMap reads a reference from an object with kind and name.
func refFromMap(x map[string]any) (reference, bool) {
	str := func(k string) string { s, _ := x[k].(string); return s }
	kind, name := str("kind"), str("name")
	if kind == "" || name == "" {
		return reference{}, false
	}
	r := reference{Name: name, Namespace: str("namespace")}
	switch {
	case str("apiVersion") != "":
		gv, err := schema.ParseGroupVersion(str("apiVersion"))
		if err != nil {
			return reference{}, false
		}
		r.GK, r.Version = schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version
	case str("version") != "":
		r.GK, r.Version = schema.GroupKind{Group: str("group"), Kind: kind}, str("version")
	default:
		return reference{}, false
	}
	return r, true
}

// managedList says whether path is a list of what the target manages
// (Argo CD's status.resources, a Crossplane composite's resourceRefs),
// rather than one reference.
func managedList(path string) bool {
	return path == "status.resources[]" || strings.HasSuffix(path, "resourceRefs[]")
}
