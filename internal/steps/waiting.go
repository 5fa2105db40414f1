/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/policy"
)

// maxWaitRefs bounds what one step records it waits on: the controller's
// diagnosis explains at most this many objects per blocked target.
const maxWaitRefs = 10

// WaitRef is an object a pending step waits on.
type WaitRef struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
}

// Wait is what a target's cleanup waits on after its last attempt, in a
// form the controller's diagnosis reads without parsing messages.
type Wait struct {
	// Target is the object torn down.
	Target WaitRef
	Policy policy.Ref
	// Step is the name of the pending or failing step; Action its kind.
	Step   string
	Action Action
	// On lists what the step waits on (at most maxWaitRefs): a delete
	// step's remaining objects, a wait step's selected objects, the pods
	// that use an unused step's target, a job step's Job.
	On []WaitRef
	// Failure is the step's error when its last attempt failed (a webhook
	// that cannot be reached, a Job that cannot be created); the step
	// waits on nothing else then.
	Failure string
}

// waitKey names one cleanup: a finalizer key on one object.
type waitKey struct {
	key string
	uid types.UID
}

// Waiting keeps, per cleanup in progress, what its step waits on. Runs
// write it, the diagnosis reads it; a cleanup that finishes or is released
// forgets its entry, and the diagnosis prunes those of objects gone
// otherwise (Retain).
type Waiting struct {
	mu sync.Mutex
	m  map[waitKey]Wait
}

// NewWaiting returns an empty Waiting.
func NewWaiting() *Waiting { return &Waiting{m: map[waitKey]Wait{}} }

// Get returns what the cleanup under key of the object uid waits on.
func (w *Waiting) Get(key string, uid types.UID) (Wait, bool) {
	if w == nil {
		return Wait{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.m[waitKey{key, uid}]
	return v, ok
}

// Retain forgets every entry keep refuses.
func (w *Waiting) Retain(keep func(key string, uid types.UID) bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.m {
		if !keep(k.key, k.uid) {
			delete(w.m, k)
		}
	}
}

func (w *Waiting) set(key string, uid types.UID, v Wait) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m[waitKey{key, uid}] = v
}

func (w *Waiting) forget(key string, uid types.UID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, waitKey{key, uid})
}

// waitingOn records ref in out's list of what the step waits on, up to
// maxWaitRefs.
func (out *outcome) waitingOn(gvk schema.GroupVersionKind, namespace, name string) {
	if len(out.waitsOn) < maxWaitRefs {
		out.waitsOn = append(out.waitsOn, WaitRef{GVK: gvk, Namespace: namespace, Name: name})
	}
}
