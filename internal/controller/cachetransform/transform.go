/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package cachetransform is the teardown-controller's cache transform: what
// the cache keeps of each object, and what objects share.
package cachetransform

import (
	"hash/maphash"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/teardown-dev/teardown/pkg/finalizer/record"
)

// New returns the transform of every object the manager's cache holds:
// managedFields are dropped (the controller never reads them, and on
// metadata-only objects they are often most of the bytes), and
// metadata-only objects share what they repeat (sharedMetadata.compact).
// Each call has a table of its own.
//
// proven says which attached records are the controller's (steps.Records:
// their seal checks); only those are shared, and a shared one reads as
// proven. nil shares every record bound to its object.
func New(proven func(obj metav1.Object, annotation string, rec record.AttachedRecord) bool) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	shared := newSharedMetadata(maxSharedEntries)
	shared.proven = proven
	return func(in any) (any, error) {
		out, err := strip(in)
		if obj, ok := out.(*metav1.PartialObjectMetadata); ok && err == nil {
			shared.compact(obj)
		}
		return out, err
	}
}

// Bounds of what sharedMetadata remembers: past maxSharedEntries it starts
// afresh (objects keep what they were given), so objects whose labels are
// all different cost it a bounded table, not one entry each forever; strings
// longer than maxSharedString are rarely repeated and never shared.
const (
	maxSharedEntries = 4096
	maxSharedString  = 512
)

// sharedMetadata hands every cached object one shared copy of what many
// objects repeat: namespaces, finalizer lists, label and annotation maps and
// their strings. With thousands of objects of one kind carrying the same
// labels, the same finalizer and the same attached record, each map is
// allocated once instead of once per object (a Go map of one entry is over
// 300 bytes).
//
// Sharing a map or a slice between cached objects is safe because nothing
// writes to cached objects: reads from the cache deep-copy them, and the
// event handlers and the UnsafeDisableDeepCopy list walks only read. It is
// hand-written because the unique package interns comparable values only,
// and maps and slices are not.
type sharedMetadata struct {
	// proven says which attached records may be shared (New).
	proven  func(obj metav1.Object, annotation string, rec record.AttachedRecord) bool
	mu      sync.Mutex
	seed    maphash.Seed
	limit   int
	strings map[string]string
	maps    map[uint64]map[string]string
	lists   map[uint64][]string
}

func newSharedMetadata(limit int) *sharedMetadata {
	s := &sharedMetadata{seed: maphash.MakeSeed(), limit: limit}
	s.reset()
	return s
}

func (s *sharedMetadata) reset() {
	s.strings = map[string]string{}
	s.maps = map[uint64]map[string]string{}
	s.lists = map[uint64][]string{}
}

// compact replaces obj's repeated parts with shared copies and drops
// kubectl's last-applied-configuration annotation: a copy of the whole object
// as last applied (a ConfigMap's or a Secret's data included), which no
// decision reads and webhook requests leave out (steps.dropAnnotation). Every
// other field is kept as it is, including whether the annotations are absent
// or empty: the attach patch tests that.
//
// Attached records bound to the object hold its UID, which would give every
// guarded object an annotation map of its own: record.ShareAttachedProven
// puts one value per policy in place of those proven the controller's,
// which its readers of the record read as proven and nobody can forge.
func (s *sharedMetadata) compact(obj *metav1.PartialObjectMetadata) {
	delete(obj.Annotations, corev1.LastAppliedConfigAnnotation)
	if s.proven == nil {
		record.ShareAttached(obj)
	} else {
		record.ShareAttachedProven(obj, func(annotation string, rec record.AttachedRecord) bool { return s.proven(obj, annotation, rec) })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.strings)+len(s.maps)+len(s.lists) > s.limit {
		s.reset()
	}
	obj.APIVersion = s.string(obj.APIVersion)
	obj.Kind = s.string(obj.Kind)
	obj.Namespace = s.string(obj.Namespace)
	obj.Labels = s.stringMap(obj.Labels)
	obj.Annotations = s.stringMap(obj.Annotations)
	obj.Finalizers = s.list(obj.Finalizers)
}

func (s *sharedMetadata) string(v string) string {
	if v == "" || len(v) > maxSharedString {
		return v
	}
	if shared, ok := s.strings[v]; ok {
		return shared
	}
	s.strings[v] = v
	return v
}

// stringMap returns the shared map equal to m; nil stays nil and empty stays
// empty.
func (s *sharedMetadata) stringMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	// The sum of the entries' hashes does not depend on the map's order.
	var sum uint64
	for k, v := range m {
		var h maphash.Hash
		h.SetSeed(s.seed)
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		sum += h.Sum64()
	}
	// A collision (or a crafted one) only costs the sharing: equal is checked.
	if shared, ok := s.maps[sum]; ok && maps.Equal(shared, m) {
		return shared
	}
	shared := make(map[string]string, len(m))
	for k, v := range m {
		shared[s.string(k)] = s.string(v)
	}
	s.maps[sum] = shared
	return shared
}

// list returns the shared slice equal to l, its length its capacity: an
// append to it makes a new array. nil stays nil and empty stays empty.
func (s *sharedMetadata) list(l []string) []string {
	if len(l) == 0 {
		return l
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	for _, v := range l {
		h.WriteString(v)
		h.WriteByte(0)
	}
	sum := h.Sum64()
	if shared, ok := s.lists[sum]; ok && slices.Equal(shared, l) {
		return shared
	}
	shared := make([]string, len(l))
	for i, v := range l {
		shared[i] = s.string(v)
	}
	s.lists[sum] = shared
	return shared
}
