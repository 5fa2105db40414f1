/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/teardown-dev/teardown/internal/diagnose/signals"
)

// leaderLockHeld: a workload with ready replicas reconciles only through
// its leader. Its leader lock says who that is: a coordination.k8s.io Lease
// (client-go's leader election; the holder identity starts with the pod's
// name) or a leader-for-life ConfigMap (operator-lib: a ConfigMap owned by
// the leader pod, released only when that pod is deleted). A lock held by a
// pod that is gone, or has stopped (Succeeded, Failed), leaves the ready
// replicas waiting to lead: the owner runs but does nothing. So does a
// Lease nobody renews while the replicas are ready.
func (e *Explainer) leaderLockHeld(ctx context.Context, o *Owner) []Finding {
	w := o.Workload
	if w == nil || w.Kind == "Lease" || w.Kind == "Pod" {
		return nil
	}
	var out []Finding
	if f, ok := e.staleLease(ctx, o); ok {
		out = append(out, f)
	}
	if f, ok := e.lifeLock(ctx, o); ok {
		out = append(out, f)
	}
	return out
}

// holderState says whether pod ns/name runs; "" when it does.
func (e *Explainer) holderState(ctx context.Context, ns, name string) string {
	p, err := e.c.Pod(ctx, ns, name)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("pod %s does not exist", joinNS(ns, name))
	case err != nil:
		return ""
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("pod %s is being deleted", joinNS(ns, name))
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return fmt.Sprintf("pod %s has stopped (phase %s)", joinNS(ns, name), p.Status.Phase)
	}
	return ""
}

// staleLease: a Lease of the workload's namespace held by one of its pods
// (by the holder identity's prefix) and left unrenewed: its holder is gone,
// stopped, or runs without renewing it, and no other replica took it over.
func (e *Explainer) staleLease(ctx context.Context, o *Owner) (Finding, bool) {
	w := o.Workload
	leases, err := e.c.Leases(ctx)
	if err != nil {
		return Finding{}, false
	}
	held := make([]*coordinationv1.Lease, 0, len(leases))
	for i := range leases {
		held = append(held, &leases[i])
	}
	serverNow, _ := e.c.ServerNow(e.now)
	for _, le := range signals.LeasesOf(signals.Workload{Ref: signals.Ref{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}}, held, serverNow) {
		// A failover takes a lease duration and a retry: only a Lease left
		// past twice its duration (and a minute) has nobody trying.
		if le.NeverRenewed || le.Renewed <= max(2*le.Duration, time.Minute) {
			continue
		}
		state := e.holderState(ctx, le.Lease.Namespace, le.Pod)
		if state == "" {
			state = fmt.Sprintf("pod %s still runs but does not renew it", joinNS(le.Lease.Namespace, le.Pod))
		}
		age := le.Renewed.Round(time.Second)
		ref := ObjectRef{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Resource: "leases", Namespace: le.Lease.Namespace, Name: le.Lease.Name}
		o.Evidence = append(o.Evidence, fmt.Sprintf("%s is held by %q, last renewed %s ago; %s", ref, le.Holder, age, state))
		return notLeading(o, ref, fmt.Sprintf("its leader Lease %s is held by %q, last renewed %s ago (past its %s duration), and %s",
			ref, le.Holder, age, ShortDuration(le.Duration), state),
			"find why no ready replica takes the Lease over (its logs: leader election errors, a denied update of the Lease, a clock skew), and restart it"), true
	}
	return Finding{}, false
}

// lifeLock: a leader-for-life ConfigMap of the workload's namespace owned
// by one of the workload's pods that is gone or stopped. The lock goes only
// with its owner pod (the garbage collector deletes it then); until then
// every new replica waits for it.
func (e *Explainer) lifeLock(ctx context.Context, o *Owner) (Finding, bool) {
	w := o.Workload
	cms, err := e.c.ConfigMapsMeta(ctx, w.Namespace)
	if err != nil {
		return Finding{}, false
	}
	for _, cm := range cms {
		for _, or := range cm.OwnerReferences {
			if or.Kind != "Pod" || !strings.HasPrefix(or.Name, w.Name+"-") {
				continue
			}
			state := e.holderState(ctx, cm.Namespace, or.Name)
			if state == "" {
				continue
			}
			ref := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: cm.Namespace, Name: cm.Name}
			o.Evidence = append(o.Evidence, fmt.Sprintf("leader-for-life lock %s is owned by pod %s; %s", ref, or.Name, state))
			remedy := fmt.Sprintf("delete pod %s: the lock goes with it (garbage collector), and a running replica of %s becomes the leader and finishes", joinNS(cm.Namespace, or.Name), w)
			if strings.Contains(state, "does not exist") {
				remedy = fmt.Sprintf("delete the lock %s (its owner pod is gone, and the garbage collector has not removed it); a running replica of %s then becomes the leader", ref, w)
			}
			return notLeading(o, ref, fmt.Sprintf("its leader-for-life lock %s is owned by pod %s, and %s: the lock is released only when that pod is deleted", ref, or.Name, state), remedy), true
		}
	}
	return Finding{}, false
}

// notLeading is the finding of a lock that keeps the owner's ready replicas
// from leading.
func notLeading(o *Owner, lock ObjectRef, why, remedy string) Finding {
	return Finding{Cause: CauseOwnerNotLeading, Catalog: "B1", Severity: SeverityBlocker, Object: &lock,
		Message:  fmt.Sprintf("%s runs (%s) but does not lead: %s; no replica reconciles, so nothing removes the finalizer", orUnknown(o.Component), o.Workload, why),
		FixOwner: "whoever runs " + orUnknown(o.Component),
		Remedy:   remedy + "; do not release: the owner is installed, and its cleanup would be skipped",
		Leaks:    "whatever " + orUnknown(o.Component) + " cleans up outside this object"}
}
