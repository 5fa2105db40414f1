/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/teardown-dev/teardown/internal/inuse"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

// unusedRecheck is how soon an unused step in use is checked again when no
// event woke it: a safety net, since the end of every use it waits on wakes
// it at once.
const unusedRecheck = 30 * time.Second

// unusedSyncRecheck is the same net while the index has not synced yet; its
// sync wakes the step too.
const unusedSyncRecheck = 5 * time.Second

// unusedMessageRecheck is how soon a step whose message changed is checked
// again: pkg/finalizer rewrites a pending message at most every 10 s (each
// write is a watch event), so a change that came sooner (a second pod
// terminating moments after the first) reaches the progress record, status
// and Events at this run instead of at the 30 s safety net.
const unusedMessageRecheck = 11 * time.Second

// unusedMessages remembers the last message of each pending unused step, to
// tell when it changed.
type unusedMessages struct {
	mu   sync.Mutex
	last map[inuse.Waiter]unusedMessage
}

type unusedMessage struct {
	text string
	at   time.Time
}

// changed records msg for w and reports whether it differs from the last.
func (m *unusedMessages) changed(w inuse.Waiter, msg string, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[inuse.Waiter]unusedMessage{}
	}
	if len(m.last) > 10000 {
		// Targets released another way (a deadline, the policy's deletion)
		// leave entries behind: drop the stale ones.
		for k, v := range m.last {
			if now.Sub(v.at) > time.Hour {
				delete(m.last, k)
			}
		}
	}
	prev, ok := m.last[w]
	if ok && prev.text == msg {
		return false
	}
	m.last[w] = unusedMessage{text: msg, at: now}
	return true
}

func (m *unusedMessages) forget(w inuse.Waiter) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, w)
}

// UsesIndex is what the unused step asks of internal/inuse's Index.
type UsesIndex interface {
	Activate()
	Check(w inuse.Waiter, gk schema.GroupKind, ns, name, scope string) (*inuse.Use, error)
	Recheck(w inuse.Waiter, d time.Duration)
}

// InUseCoverage is the in-use webhook's reach (internal/admit.Coverage):
// Cover asks that the pods of a namespace be checked, and answers since when
// the configuration doing so is known stored (zero until then, with the
// error that keeps it from being stored, if any); w is woken once it is.
type InUseCoverage interface {
	Cover(ns string, w queuekey.Request) (time.Time, error)
}

// unusedCoverRecheck is the safety net of a step waiting for the in-use
// webhook to cover its target's namespace; the coverage wakes it first.
const unusedCoverRecheck = 5 * time.Second

// unusedLagRecheck is how soon a step is run again when the API server
// showed a use the index has not seen yet: the index catches up within
// moments, and then registers the step under that use.
const unusedLagRecheck = time.Second

// unused holds t while any pod that counts uses it (internal/inuse says
// what counts). A TeardownPolicy sees only the pods of its own namespace.
func (r *Runner) unused(ctx context.Context, pol *policy.Policy, key string, i int, t Object) outcome {
	if r.Uses == nil {
		return transient(errors.New("the controller runs without its index of pods"))
	}
	gk := t.GVK.GroupKind()
	if !inuse.Supported(gk) {
		// The API refuses such a policy; an older stored one fails here.
		return failed(fmt.Errorf("pods do not use %s objects by reference: an unused step holds ServiceAccounts, Secrets, ConfigMaps, Roles, ClusterRoles, RoleBindings and ClusterRoleBindings", gk.Kind))
	}
	r.Uses.Activate()
	scope := ""
	if pol.Ref.Kind == policy.KindNamespaced {
		scope = pol.Ref.Namespace
	}
	w := inuse.Waiter{GVK: t.GVK, Key: client.ObjectKeyFromObject(t.Obj)}
	// Asked at every run, from the first: the coverage is then long stored
	// when the last user goes, and costs that release no wait.
	covered, coverErr := r.coverage(gk, t)
	use, err := r.Uses.Check(w, gk, t.Obj.GetNamespace(), t.Obj.GetName(), scope)
	switch {
	case errors.Is(err, inuse.ErrNotSynced):
		return r.unusedPending(w, r.recheckWithin(pol, key, i, t, unusedSyncRecheck), "waiting for the controller's index of pods to sync")
	case err != nil:
		return transient(err)
	}
	lagging := false
	if len(use.Pods) == 0 {
		// The index is an informer's view: a pod created moments before
		// the target was deleted may not have reached it yet. "Unused" ends
		// the step, so it is confirmed by the API server first, once every
		// pod the in-use webhook admitted before the deletion is stored, and
		// every pod it was not asked about before its configuration covered
		// the target's namespace.
		if covered == nil {
			msg := fmt.Sprintf("waiting for the in-use webhook to check new pods of namespace %s", t.Obj.GetNamespace())
			if coverErr != nil {
				msg += ": " + coverErr.Error()
			}
			return r.unusedPending(w, r.recheckWithin(pol, key, i, t, unusedCoverRecheck), msg)
		}
		if wait := r.unusedGraceLeft(t.Obj, *covered); wait > 0 {
			return r.unusedPending(w, wait, fmt.Sprintf("waiting %s after the deletion for pods admitted before it to be stored", r.UnusedGrace))
		}
		live, err := r.confirmUnused(ctx, gk, t.Obj.GetNamespace(), t.Obj.GetName(), scope)
		if err != nil {
			return transient(fmt.Errorf("confirming that no pod uses %s %s: %w", gk.Kind, client.ObjectKeyFromObject(t.Obj), err))
		}
		if len(live.Pods) == 0 {
			r.unusedMessages.forget(w)
			return done()
		}
		logf.FromContext(ctx).V(1).Info("The index of pods has not seen a use the API server shows yet; checking again shortly",
			"target", klog.KObj(t.Obj), "pods", len(live.Pods))
		use, lagging = live, true
	}
	// The message lands on the target, read by whoever may read its
	// namespace: pods elsewhere (a RoleBinding's subject may name another
	// namespace's ServiceAccounts) are counted, not named. What the
	// diagnosis reads (waitingOn) keeps them all.
	msg := inuse.DescribeFor(gk.Kind, use, audienceOf(t))
	recheck := unusedRecheck
	if r.unusedMessages.changed(w, msg, r.now()) {
		recheck = unusedMessageRecheck
	}
	if lagging {
		recheck = unusedLagRecheck
	}
	out := r.unusedPending(w, r.recheckWithin(pol, key, i, t, recheck), msg)
	for _, p := range use.Pods {
		out.waitingOn(corev1.SchemeGroupVersion.WithKind("Pod"), p.Namespace, p.Name)
	}
	return out
}

// coverage asks the in-use webhook to check new pods of the target's
// namespace, and answers since when it does: nil while it does not yet, the
// zero time when nothing is to be asked (no webhook, or a kind no pod names
// itself: RBAC objects).
func (r *Runner) coverage(gk schema.GroupKind, t Object) (*time.Time, error) {
	ns := t.Obj.GetNamespace()
	if r.Coverage == nil || ns == "" || !inuse.NamedByPods(gk) {
		return &time.Time{}, nil
	}
	since, err := r.Coverage.Cover(ns, queuekey.For(t.GVK, client.ObjectKeyFromObject(t.Obj)))
	if since.IsZero() {
		return nil, err
	}
	return &since, nil
}

// recheckWithin shortens recheck to a second past step i's timeout
// (timeLeft), so that a step nothing wakes still times out on time. The
// policy's deadline needs nothing here: pkg/finalizer requeues for it.
func (r *Runner) recheckWithin(pol *policy.Policy, key string, i int, t Object, recheck time.Duration) time.Duration {
	if left := r.timeLeft(pol, key, i, t); left > 0 {
		return min(recheck, left)
	}
	return recheck
}

// unusedPending is a pending outcome that asks for no requeue: the index
// wakes the cleanup when a use it waits on ends, and after recheck at the
// latest. A requeue time would be recorded by pkg/finalizer, which then
// holds back every earlier wake until that time.
func (r *Runner) unusedPending(w inuse.Waiter, recheck time.Duration, msg string) outcome {
	r.Uses.Recheck(w, recheck)
	out := pending(0, "%s", msg)
	out.after = 0
	return out
}
