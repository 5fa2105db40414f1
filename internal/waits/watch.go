/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package waits

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/teardown-dev/teardown/internal/queuekey"
)

// kindState is how far the watch of a kind is.
type kindState int

const (
	// starting: the access check or the watch's first list is under way.
	starting kindState = iota
	// watching: events of the kind are delivered.
	watching
	// refused: the controller may not list and watch the kind; steps on it
	// poll. Asked again after recheckRefused.
	refused
	// failed: the check or the watch's start failed; asked again after
	// retryFailed.
	failed
)

const (
	// recheckRefused: RBAC granted later is noticed this long after, at the
	// latest (until then the step polls, as it would anyway).
	recheckRefused = 10 * time.Minute
	retryFailed    = 30 * time.Second
	// syncTimeout bounds the watch's first list.
	syncTimeout = 2 * time.Minute
)

type kind struct {
	state kindState
	until time.Time // refused, failed: when to try again
}

// kindLocked returns the state of gvk's watch, starting it (in the
// background) on first use and after a refusal or failure has expired.
func (r *Registry) kindLocked(gvk schema.GroupVersionKind) kindState {
	k := r.kinds[gvk]
	if k != nil && (k.state == starting || k.state == watching || r.opts.Now().Before(k.until)) {
		return k.state
	}
	if r.ctx.Err() != nil {
		return failed
	}
	r.kinds[gvk] = &kind{state: starting}
	go r.startWatch(gvk)
	return starting
}

func (r *Registry) setKind(gvk schema.GroupVersionKind, state kindState, retryAfter time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := &kind{state: state}
	if retryAfter > 0 {
		k.until = r.opts.Now().Add(retryAfter)
	}
	r.kinds[gvk] = k
	watchedKinds.Set(float64(r.countLocked(watching)))
}

func (r *Registry) countLocked(state kindState) int {
	n := 0
	for _, k := range r.kinds {
		if k.state == state {
			n++
		}
	}
	return n
}

// startWatch checks, once, that the controller may list and watch gvk in
// every namespace, and then adds a handler to the cache's metadata-only
// informer of gvk. A kind the controller may not watch is not watched: its
// steps keep polling with their own identity's reads.
func (r *Registry) startWatch(gvk schema.GroupVersionKind) {
	log := logf.FromContext(r.ctx).WithName("waits").WithValues("kind", gvk.String())
	allowed, err := r.mayWatch(r.ctx, gvk)
	switch {
	case err != nil:
		log.Info("Could not check whether the controller may watch the kind; its waits poll for now", "err", err.Error())
		r.setKind(gvk, failed, retryFailed)
		return
	case !allowed:
		log.Info("The controller may not list and watch the kind in every namespace; waits on it poll")
		r.setKind(gvk, refused, recheckRefused)
		return
	}
	if err := r.addHandler(gvk); err != nil {
		if r.ctx.Err() == nil {
			log.Info("Could not watch the kind; its waits poll for now", "err", err.Error())
		}
		r.setKind(gvk, failed, retryFailed)
		return
	}
	log.V(1).Info("Watching the kind for waiting steps")
	r.watchStarted(gvk)
}

// watchStarted marks gvk watched and wakes the targets registered on it
// while its watch was starting. They were timed like a poll, and an object
// that went between their read and the watch's first list is in no event:
// woken now, each reads again, and registers covered if still pending.
func (r *Registry) watchStarted(gvk schema.GroupVersionKind) {
	r.setKind(gvk, watching, 0)
	r.mu.Lock()
	var wake []queuekey.Request
	for _, bucket := range r.index[gvk] {
		for t := range bucket {
			if !slices.Contains(wake, t) {
				wake = append(wake, t)
			}
		}
	}
	for _, t := range wake {
		// Not counted against MinInterval: it happens once per kind, and
		// the event it may precede must not wait for it.
		if w := r.targets[t]; w != nil {
			r.dropLocked(t, w)
		}
	}
	registered.Set(float64(len(r.targets)))
	r.mu.Unlock()
	if len(wake) > 0 {
		wakes.WithLabelValues(causeWatchStarted).Add(float64(len(wake)))
		r.opts.Wake(r.ctx, wake...)
	}
}

// mayWatch asks the API server whether the controller may list and watch
// gvk in every namespace (the informer's scope).
func (r *Registry) mayWatch(ctx context.Context, gvk schema.GroupVersionKind) (bool, error) {
	mapping, err := r.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	for _, verb := range []string{"list", "watch"} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: mapping.Resource.Group, Version: mapping.Resource.Version, Resource: mapping.Resource.Resource,
			},
		}}
		if err := r.opts.Client.Create(ctx, review); err != nil {
			return false, fmt.Errorf("asking whether the controller may %s %s: %w", verb, mapping.Resource.Resource, err)
		}
		if !review.Status.Allowed {
			return false, nil
		}
	}
	return true, nil
}

// addHandler adds the wake handler to gvk's metadata-only informer and waits
// until it has seen the informer's first list.
func (r *Registry) addHandler(gvk schema.GroupVersionKind) error {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	ctx, cancel := context.WithTimeout(r.ctx, syncTimeout)
	defer cancel()
	informer, err := r.opts.Cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("getting the informer: %w", err)
	}
	reg, err := informer.AddEventHandler(r.handler(gvk))
	if err != nil {
		return fmt.Errorf("adding the handler: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return reg.HasSynced(), nil
	})
	if err != nil {
		// The informer stays, shared with whoever else uses it; only this
		// handler goes.
		return errors.Join(fmt.Errorf("waiting for the first list: %w", err), informer.RemoveEventHandler(reg))
	}
	return nil
}

// handler wakes on every add, update and delete of an object of gvk. The
// objects of the informer's first list are not news to anyone: a step
// registered before it ran polls, and reads them itself.
func (r *Registry) handler(gvk schema.GroupVersionKind) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				r.observe(gvk, obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, errOld := meta.Accessor(oldObj)
			n, errNew := meta.Accessor(newObj)
			if errOld != nil || errNew != nil {
				return
			}
			if o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync, not a change
			}
			r.changed(gvk, n.GetNamespace(), o.GetLabels(), n.GetLabels())
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			r.observe(gvk, obj)
		},
	}
}

func (r *Registry) observe(gvk schema.GroupVersionKind, obj any) {
	o, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	r.changed(gvk, o.GetNamespace(), labels.Set(o.GetLabels()))
}
