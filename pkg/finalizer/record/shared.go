/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"strings"
	"sync"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sharedBound starts the value that ShareAttached puts in place of an
// attached record bound to its object. Only what it says to a person
// reading a cached object: what makes it count as bound is its identity
// (sharedAttached.is), never its text.
const sharedBound = "<bound>"

// unprovenPrefix is put before a raw record whose text starts like a shared
// one, so that no raw value in a cache ever equals a shared one: a cache
// that shares equal strings and maps (the teardown-controller's does) must
// never hand an object the shared value in place of a forgery of it.
const unprovenPrefix = "<unproven>"

// maxSharedAttachers bounds the attachers (policies) that ShareAttached
// keeps a value for. Anyone who may patch an object may write a bound
// record naming anyone; past the bound, records keep their own value and are
// read as before (bound by their text), so a flood costs the sharing only.
const maxSharedAttachers = 4096

// ShareAttached rewrites, in place, every attached record on obj that is
// bound to obj (AttachedBy) into one value shared by every object whose
// record names the same attacher, for a cache: a bound record's value
// holds obj's UID, so without this every cached object carries an
// annotation map of its own (a Go map is over 300 bytes), where with it
// objects guarded by one policy can share one map. AttachedBy reads the
// shared value as bound to whichever object carries it.
//
// The shared value is recognized by its identity (the string this
// function made), not by its text: a string decoded from the API server is
// never it, whatever it says, so writing its text into an annotation
// proves nothing. A record that is not bound stays unbound; one whose text
// starts like a shared value gets unprovenPrefix before it.
//
// Only for a cache of objects that nothing writes back: the shared value
// is not the record the API server holds. Writes build their records from
// the object's UID (the removal patch removes the record by key).
func ShareAttached(obj metav1.Object) {
	ShareAttachedProven(obj, nil)
}

// ShareAttachedProven is ShareAttached for a cache whose reader checks
// seals (Sealer): only the records proven says are its own are shared
// (proven nil: every bound record), the others stay as they are, and a
// shared value reads as proven (AttachedRecord.Shared). proven gets the
// record's annotation key.
func ShareAttachedProven(obj metav1.Object, proven func(annotation string, rec AttachedRecord) bool) {
	annotations := obj.GetAnnotations()
	for k, v := range annotations {
		if !strings.HasPrefix(k, AttachedAnnotationPrefix) {
			continue
		}
		if _, shared := sharedAttached.is(v); shared {
			// Shared already: client-go asks transforms to be idempotent.
			continue
		}
		if by, bound := boundBy(v, string(obj.GetUID())); bound {
			seal := SealAnnotationPrefix + strings.TrimPrefix(k, AttachedAnnotationPrefix)
			if proven != nil && !proven(k, AttachedRecord{By: by, Seal: annotations[seal]}) {
				continue
			}
			if shared, ok := sharedAttached.value(by); ok {
				annotations[k] = shared
				// Proven once, for this cached object: its seal, unique to
				// it, would keep its annotation map from being shared.
				delete(annotations, seal)
			}
		} else if strings.HasPrefix(v, sharedBound) {
			annotations[k] = unprovenPrefix + v
		}
	}
}

// boundBy reads a record's value as AttachedBy reads it from the API
// server: bound when it is uid, or uid, "/" and who attached it.
func boundBy(v, uid string) (string, bool) {
	if uid == "" || len(v) > maxAttachedValue {
		return "", false
	}
	if v == uid {
		return "", true
	}
	if len(v) > len(uid) && v[len(uid)] == '/' && strings.HasPrefix(v, uid) {
		return v[len(uid)+1:], true
	}
	return "", false
}

// sharedValues holds the one shared value per attacher: read without a
// lock; made under one, so that the bound is exact.
type sharedValues struct {
	limit  int
	values sync.Map // attacher -> shared value
	mu     sync.Mutex
	count  int // values stored, under mu
}

var sharedAttached = &sharedValues{limit: maxSharedAttachers}

// value returns the shared value of a record naming by, made on first
// use; false past its limit.
func (s *sharedValues) value(by string) (string, bool) {
	if v, ok := s.values.Load(by); ok {
		return v.(string), true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.values.Load(by); ok {
		return v.(string), true
	}
	if s.count >= s.limit {
		return "", false
	}
	v := sharedBound
	if by != "" {
		v += "/" + by
	}
	// A fresh copy: the string is the proof, and a constant's or the
	// caller's storage may be shared with strings that are not.
	v = strings.Clone(v)
	s.values.Store(strings.Clone(by), v)
	s.count++
	return v, true
}

// is reports whether v is a shared value, and whom it names: the very
// string value() made, compared by address (Go strings do not move, and
// a copy of a string header, as DeepCopy makes, keeps the address).
func (s *sharedValues) is(v string) (string, bool) {
	by, ok := strings.CutPrefix(v, sharedBound)
	if !ok {
		return "", false
	}
	if by != "" {
		if by, ok = strings.CutPrefix(by, "/"); !ok {
			return "", false
		}
	}
	shared, ok := s.values.Load(by)
	if !ok {
		return "", false
	}
	if w := shared.(string); len(w) != len(v) || unsafe.StringData(w) != unsafe.StringData(v) {
		return "", false
	}
	return by, true
}
