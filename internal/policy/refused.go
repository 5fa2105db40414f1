/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// MaxRefused bounds how many refused objects one policy tracks: a tenant
// who fills the annotations of many objects costs the controller a bounded
// set, and the status counts up to this many.
const MaxRefused = 1000

// RefusedObject is an object a policy selects on which the API server
// refused a write Teardown must make (finalizer.RefusedError).
type RefusedObject struct {
	UID             types.UID
	GVK             schema.GroupVersionKind
	Namespace, Name string
	// Write is what was refused: finalizer.WriteAttach (the object is not
	// guarded) or finalizer.WriteProgress (its deletion is held and its
	// progress cannot be recorded).
	Write string
	// Message is the API server's answer, in one short line.
	Message string
	// Since is when this write was first refused.
	Since time.Time
}

// Refused is the set of a policy's refused objects, kept in memory by the
// controller that meets the refusals (every version of one policy shares
// it) and read by its status. A nil *Refused holds nothing and keeps
// nothing. A refusal is tried again, so a restart finds
// them again.
type Refused struct {
	mu      sync.Mutex
	objects map[types.UID]RefusedObject
}

// NewRefused returns an empty set.
func NewRefused() *Refused { return &Refused{objects: map[types.UID]RefusedObject{}} }

// Add records o, keeping the Since of the same write refused before. It
// does nothing once MaxRefused objects are held.
func (r *Refused) Add(o RefusedObject) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.objects[o.UID]; ok {
		if prev.Write == o.Write {
			o.Since = prev.Since
		}
	} else if len(r.objects) >= MaxRefused {
		return
	}
	r.objects[o.UID] = o
}

// Forget drops the object with this UID if its refused write is write (any
// write when write is ""): that write went through, the object left the
// policy's selectors, or it is gone.
func (r *Refused) Forget(uid types.UID, write string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.objects[uid]; ok && (write == "" || o.Write == write) {
		delete(r.objects, uid)
	}
}

// Has reports whether the object with this UID is held.
func (r *Refused) Has(uid types.UID) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.objects[uid]
	return ok
}

// Keep drops every object for which keep is false.
func (r *Refused) Keep(keep func(types.UID) bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.objects {
		if !keep(uid) {
			delete(r.objects, uid)
		}
	}
}

// List returns the objects held, longest refused first (then by namespace
// and name).
func (r *Refused) List() []RefusedObject {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	out := make([]RefusedObject, 0, len(r.objects))
	for _, o := range r.objects {
		out = append(out, o)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b RefusedObject) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
