/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"sort"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Family 2: the objects that name the target. Many finalizers are in-use
// protections: the object stays while others name it (a class named by the
// objects of another kind, a claim named by a snapshot, a parent named by
// its children's ownerReferences or a created-by label). Referrers finds
// them in objects the run already holds (lists of the kinds that can
// plausibly name the target, PlausibleKinds), never by a request per
// object.

// Strength says how sure a reference is.
type Strength string

// Strengths.
const (
	// StrengthCertain: an ownerReference to the target's UID, or a field
	// whose key, or whose sibling kind field, names the target's kind.
	StrengthCertain Strength = "certain"
	// StrengthLikely: the target's name in a reference field ("name"
	// under a ...Ref) or a label whose key names its kind.
	StrengthLikely Strength = "likely"
)

// Target is the object being deleted, as Referrers matches it.
type Target struct {
	APIVersion, Kind, Namespace, Name string
	UID                               types.UID
}

// TargetOf is obj as a Target.
func TargetOf(obj *unstructured.Unstructured) Target {
	return Target{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
}

// Referrer is an object that names the target.
type Referrer struct {
	Object Ref
	// Via is where: "ownerReference (controller)", "spec.gatewayClassName",
	// "label cluster.x-k8s.io/cluster-name".
	Via      string
	Strength Strength
	// Deleting: the referrer is itself being deleted.
	Deleting bool
}

// String is "Gateway shop/web (spec.gatewayClassName)".
func (r Referrer) String() string {
	s := r.Object.String() + " (" + r.Via
	if r.Deleting {
		s += ", itself being deleted"
	}
	return s + ")"
}

// maxReferrers bounds what one target reports: the first ones name the
// blocker, a count says the rest.
const maxReferrers = 20

// Referrers returns the candidates that name target: by an ownerReference
// to its UID, by a spec field holding its name whose key (or whose sibling
// "kind") names its kind or is a reference ("...Ref.name"), or by a label
// whose key names its kind or says created-by. A namespaced target is named
// only from its own namespace (or where a sibling "namespace" field says
// its namespace); a cluster-scoped one from anywhere. Sorted, strongest
// first, at most maxReferrers; total is how many were found.
func Referrers(target Target, candidates []*unstructured.Unstructured) (refs []Referrer, total int) {
	kind := lower(target.Kind)
	for _, c := range candidates {
		if target.UID != "" && c.GetUID() == target.UID {
			continue
		}
		r, ok := referrerOf(target, kind, c)
		if !ok {
			continue
		}
		refs = append(refs, r)
	}
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].Strength != refs[j].Strength {
			return refs[i].Strength == StrengthCertain
		}
		return refs[i].Object.String() < refs[j].Object.String()
	})
	total = len(refs)
	if len(refs) > maxReferrers {
		refs = refs[:maxReferrers]
	}
	return refs, total
}

// referrerOf returns the strongest way c names target.
func referrerOf(target Target, kind string, c *unstructured.Unstructured) (Referrer, bool) {
	out := Referrer{Object: RefOf(c), Deleting: c.GetDeletionTimestamp() != nil}
	if target.UID != "" {
		for _, or := range c.GetOwnerReferences() {
			if or.UID != target.UID {
				continue
			}
			out.Via, out.Strength = "ownerReference", StrengthCertain
			if or.Controller != nil && *or.Controller {
				out.Via += " (controller)"
			}
			return out, true
		}
	}
	sameNS := target.Namespace == "" || c.GetNamespace() == target.Namespace
	var best *Referrer
	consider := func(via string, s Strength) {
		if best == nil || (best.Strength != StrengthCertain && s == StrengthCertain) {
			r := out
			r.Via, r.Strength = via, s
			best = &r
		}
	}
	if spec, ok := c.Object["spec"].(map[string]any); ok {
		walk(spec, "spec", func(f field) {
			if f.Value != target.Name {
				return
			}
			if ns, said := f.Siblings["namespace"]; said && f.Key == "name" {
				if target.Namespace != "" && ns != target.Namespace {
					return
				}
			} else if !sameNS {
				return
			}
			if s, ok := fieldNames(f, kind, target.Kind); ok {
				consider(f.Path, s)
			}
		})
	}
	if sameNS {
		labels := c.GetLabels()
		for _, k := range sortedKeys(labels) {
			if labels[k] != target.Name {
				continue
			}
			fk := lower(k)
			if strings.Contains(fk, kind) || strings.Contains(fk, "createdby") || strings.Contains(fk, "ownedby") || strings.Contains(fk, "parent") {
				consider("label "+k, StrengthLikely)
			}
		}
	}
	if best == nil {
		return Referrer{}, false
	}
	return *best, true
}

// fieldNames says whether a field holding the target's name refers to it:
// certain when its key (or its parent's key, for "name") names the kind, or
// a sibling "kind" field is the target's kind; likely for the "name" of a
// reference ("...Ref", "...Refs") without a kind; no otherwise (a name that
// merely equals).
func fieldNames(f field, kind, targetKind string) (Strength, bool) {
	if k, said := f.Siblings["kind"]; said && f.Key == "name" {
		if k == targetKind {
			return StrengthCertain, true
		}
		return "", false
	}
	key, parent := lower(f.Key), lower(f.Parent)
	short := shortKind(kind)
	switch {
	case strings.Contains(key, kind), short != "" && strings.Contains(key, short):
		return StrengthCertain, true
	case key == "name" && (strings.Contains(parent, kind) || short != "" && strings.Contains(parent, short)):
		return StrengthCertain, true
	case tailNamed(key, targetKind):
		return StrengthCertain, true
	case key == "name" && (strings.HasSuffix(parent, "ref") || strings.HasSuffix(parent, "refs")):
		return StrengthLikely, true
	}
	return "", false
}

// tailNamed says whether a folded key is "<tail>name" or "<tail>ref", tail
// the last words of the target's kind (CamelCase words): filesystemName
// names a CephFilesystem, volumeName a PersistentVolume, className a
// VirtualMachineClass. A key must say "name" or "ref": a bare word (a
// pod's "volumes") names nothing.
func tailNamed(key, targetKind string) bool {
	words := camelWords(targetKind)
	for i := 1; i < len(words); i++ {
		tail := strings.ToLower(strings.Join(words[i:], ""))
		if key == tail+"name" || key == tail+"ref" {
			return true
		}
	}
	return false
}

// camelWords cuts a kind into its CamelCase words ("CephFilesystem":
// "Ceph", "Filesystem"; "VMClass": "VM", "Class").
func camelWords(kind string) []string {
	var out []string
	start := 0
	r := []rune(kind)
	for i := 1; i < len(r); i++ {
		upper := unicode.IsUpper(r[i])
		if upper && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			out = append(out, string(r[start:i]))
			start = i
		}
	}
	return append(out, string(r[start:]))
}

// shortKind is the kind's last word for keys such as claimName ("claim" of
// persistentvolumeclaim, "snapshot" of volumesnapshot); "" otherwise, since
// words such as "class" or "config" are too generic.
func shortKind(folded string) string {
	for _, w := range []string{"claim", "snapshot"} {
		if strings.HasSuffix(folded, w) && folded != w {
			return w
		}
	}
	return ""
}

// maxPlausibleKinds bounds the lists one target costs: one list per kind.
const maxPlausibleKinds = 8

// PlausibleKinds are the kinds, among served, whose objects can plausibly
// name target: the other kinds of its API group (a class and the objects of
// its group that use it, a parent and its children; not for the core group,
// whose kinds are unrelated), then watched (the kinds the finalizer's owner
// reads, when known), then for a core or storage target the kinds that name
// claims and volumes (Pods, claims, snapshots, attachments); at most
// maxPlausibleKinds.
func PlausibleKinds(target schema.GroupVersionKind, served, watched []schema.GroupVersionKind) []schema.GroupVersionKind {
	seen := map[schema.GroupKind]bool{}
	var out []schema.GroupVersionKind
	add := func(gvk schema.GroupVersionKind) {
		if len(out) >= maxPlausibleKinds || seen[gvk.GroupKind()] {
			return
		}
		seen[gvk.GroupKind()] = true
		out = append(out, gvk)
	}
	seen[target.GroupKind()] = true
	for _, gvk := range served {
		if target.Group != "" && gvk.Group == target.Group {
			add(gvk)
		}
	}
	for _, gvk := range watched {
		add(gvk)
	}
	if target.Group == "" || strings.HasPrefix(target.Group, "storage.k8s.io") || strings.HasPrefix(target.Group, "snapshot.storage.k8s.io") {
		for _, gvk := range served {
			if gvk.Group == "" && (gvk.Kind == "Pod" || gvk.Kind == "PersistentVolumeClaim") {
				add(gvk)
			}
			if gvk.Group == "snapshot.storage.k8s.io" && gvk.Kind == "VolumeSnapshot" || gvk.Group == "storage.k8s.io" && gvk.Kind == "VolumeAttachment" {
				add(gvk)
			}
		}
	}
	return out
}
