/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
)

// A teardown whose object has no room for its step record (a tenant filled
// its annotations) is recorded off the object, in the starting policy's
// status.startedTeardowns, by object UID and key: only the controller writes
// a policy's status, it survives a restart and a failover, and it goes with
// the policy. Starters.StartedBy reads it before the object's own records,
// so every decision of "who started this teardown" (guarded's actor, Owns)
// names the policy that started it, and a policy that takes the key later
// leaves it to that one (docs/controller.md, "Objects too large for the
// records").

// MaxStartedTeardowns bounds a policy's status.startedTeardowns, as the
// CRD does: past it the policy starts no more teardowns on objects without
// room for their record (errStartersFull).
const MaxStartedTeardowns = 100

// StartedIndex is the cache index of policies by the teardowns their
// status.startedTeardowns names: "<object UID>/<key>".
const StartedIndex = "teardown.dev/started-teardowns"

func startedValue(uid types.UID, key string) string { return string(uid) + "/" + key }

// StartedIndexValues is StartedIndex's function, for either kind of policy.
func StartedIndexValues(obj client.Object) []string {
	p, ok := obj.(teardownv1alpha1.PolicyObject)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range p.PolicyStatus().StartedTeardowns {
		out = append(out, startedValue(types.UID(e.UID), e.Finalizer))
	}
	return out
}

// ReasonStartedTeardownsFull is the progress reason of a teardown not
// started because its policy's status.startedTeardowns is full.
const ReasonStartedTeardownsFull = "StartedTeardownsFull"

// errStartersFull says the policy's status holds MaxStartedTeardowns.
var errStartersFull = fmt.Errorf("%s: the policy's status.startedTeardowns holds %d teardowns on objects without room for their step record, the most it keeps; this one starts once one of them finishes, or once its object has room",
	ReasonStartedTeardownsFull, MaxStartedTeardowns)

// Starters reads and writes status.startedTeardowns. It reads which policy
// started or attached a teardown (guarded.Proofs) from there first, then
// from the records on the object as Records proves them.
type Starters struct {
	// Records proves the records on the objects.
	Records Records
	// Cache is the cache of policies, with StartedIndex.
	Cache client.Reader
	// Client writes the policies' status; Reader reads them, and the
	// objects Prune checks, from the API server.
	Client client.Client
	Reader client.Reader
	// Lease fences the writes to this replica's leadership.
	Lease *lease.Gate
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// StartedBy returns the policy that started obj's teardown under key: the
// policy whose status.startedTeardowns names obj (its UID) and key, while
// obj is being deleted and carries key, else the step record bound to obj
// (Records.StartedBy). The status comes first: only the controller
// writes it, whereas anyone who may patch obj may write its annotations.
// A namespaced policy's entry counts only for objects of its namespace.
func (s *Starters) StartedBy(obj metav1.Object, key string) (types.UID, bool) {
	if s == nil {
		return Records{}.StartedBy(obj, key)
	}
	if uid, ok := s.offObject(context.Background(), obj, key); ok {
		return uid, true
	}
	return s.Records.StartedBy(obj, key)
}

// AttachedBy returns the policy that attached key to obj, from the
// attached record as Records proves it.
func (s *Starters) AttachedBy(obj metav1.Object, key string) (types.UID, bool) {
	if s == nil {
		return Records{}.AttachedBy(obj, key)
	}
	return s.Records.AttachedBy(obj, key)
}

// offObject is the status entry's policy, when one names obj and key.
func (s *Starters) offObject(ctx context.Context, obj metav1.Object, key string) (types.UID, bool) {
	if s == nil || s.Cache == nil || obj.GetDeletionTimestamp() == nil || obj.GetUID() == "" || !slices.Contains(obj.GetFinalizers(), key) {
		return "", false
	}
	match := client.MatchingFields{StartedIndex: startedValue(obj.GetUID(), key)}
	var found []teardownv1alpha1.PolicyObject
	cluster := &teardownv1alpha1.ClusterTeardownPolicyList{}
	if err := s.Cache.List(ctx, cluster, match); err == nil {
		for i := range cluster.Items {
			found = append(found, &cluster.Items[i])
		}
	}
	if obj.GetNamespace() != "" {
		namespaced := &teardownv1alpha1.TeardownPolicyList{}
		if err := s.Cache.List(ctx, namespaced, match, client.InNamespace(obj.GetNamespace())); err == nil {
			for i := range namespaced.Items {
				found = append(found, &namespaced.Items[i])
			}
		}
	}
	// Two entries for one teardown are not written (the second policy
	// would have read the first's); should there be, the earliest counts.
	var best types.UID
	var since time.Time
	for _, p := range found {
		if p.GetDeletionTimestamp() != nil && len(p.GetFinalizers()) == 0 {
			continue
		}
		for _, e := range p.PolicyStatus().StartedTeardowns {
			if types.UID(e.UID) != obj.GetUID() || e.Finalizer != key {
				continue
			}
			if best == "" || e.Since.Time.Before(since) || e.Since.Time.Equal(since) && p.GetUID() < best {
				best, since = p.GetUID(), e.Since.Time
			}
		}
	}
	return best, best != ""
}

// noRoomFor reports whether obj's annotations leave no room for a step
// record under key: the API server refuses annotations past
// apivalidation.TotalAnnotationSizeLimitB, keys and values together.
func noRoomFor(obj metav1.Object, key string) bool {
	total := 0
	for k, v := range obj.GetAnnotations() {
		total += len(k) + len(v)
	}
	return total+len(StateAnnotation(key))+maxStateAnnotation > apivalidation.TotalAnnotationSizeLimitB
}

// policyObject is an empty policy of pol's kind, named as pol.
func policyObject(pol *policy.Policy) teardownv1alpha1.PolicyObject {
	if pol.Ref.Kind == policy.KindCluster {
		return &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: pol.Ref.Name}}
	}
	return &teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: pol.Ref.Namespace, Name: pol.Ref.Name}}
}

// Record adds t under key to pol's status.startedTeardowns, unless it is
// there: read from the API server and written with its resourceVersion, so
// no entry another writer added is lost, and only while this replica
// leads. errStartersFull when the status holds MaxStartedTeardowns.
func (s *Starters) Record(ctx context.Context, pol *policy.Policy, key string, t Object) error {
	if s == nil || s.Client == nil {
		return nil
	}
	if by, ok := s.offObject(ctx, t.Obj, key); ok && by == pol.UID {
		return nil // already there, as the cache says
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := policyObject(pol)
		if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return fmt.Errorf("reading %s: %w", pol.Ref, err)
		}
		if p.GetUID() != pol.UID {
			return fmt.Errorf("%s is another policy now (UID %s, not %s)", pol.Ref, p.GetUID(), pol.UID)
		}
		status := p.PolicyStatus()
		if slices.ContainsFunc(status.StartedTeardowns, func(e teardownv1alpha1.StartedTeardown) bool {
			return types.UID(e.UID) == t.Obj.GetUID() && e.Finalizer == key
		}) {
			return nil
		}
		if len(status.StartedTeardowns) >= MaxStartedTeardowns {
			return errStartersFull
		}
		if err := s.Lease.Allow(); err != nil {
			return err
		}
		epoch := s.Lease.Epoch()
		apiVersion, kind := t.GVK.ToAPIVersionAndKind()
		status.StartedTeardowns = append(status.StartedTeardowns, teardownv1alpha1.StartedTeardown{
			Object: teardownv1alpha1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: t.Obj.GetNamespace(), Name: t.Obj.GetName()},
			UID:    string(t.Obj.GetUID()), Finalizer: key, Since: metav1.NewTime(s.now().UTC().Truncate(time.Second)),
			Lease: epoch.Lease, Epoch: epoch.Transitions,
		})
		return s.Client.Status().Update(ctx, p)
	})
}

// Prune drops the entries of the policy p (as the cache holds it) whose
// object, read from the API server, is gone or no longer carries the key:
// what the entry says is over. A write only while this replica leads, with
// the resourceVersion it read.
func (s *Starters) Prune(ctx context.Context, p teardownv1alpha1.PolicyObject) error {
	if s == nil || s.Client == nil || len(p.PolicyStatus().StartedTeardowns) == 0 {
		return nil
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := p.DeepCopyObject().(teardownv1alpha1.PolicyObject)
		if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(p), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		status := fresh.PolicyStatus()
		kept := make([]teardownv1alpha1.StartedTeardown, 0, len(status.StartedTeardowns))
		for _, e := range status.StartedTeardowns {
			live, err := s.stillStarted(ctx, e)
			if err != nil {
				return err
			}
			if live {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(status.StartedTeardowns) {
			return nil
		}
		if err := s.Lease.Allow(); err != nil {
			return err
		}
		status.StartedTeardowns = kept
		if len(kept) == 0 {
			status.StartedTeardowns = nil
		}
		return s.Client.Status().Update(ctx, fresh)
	})
}

// stillStarted reports whether e's object exists, is e's (its UID) and
// carries e's key.
func (s *Starters) stillStarted(ctx context.Context, e teardownv1alpha1.StartedTeardown) (bool, error) {
	gv, err := schema.ParseGroupVersion(e.Object.APIVersion)
	if err != nil {
		return false, nil // not one the controller wrote
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gv.WithKind(e.Object.Kind))
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: e.Object.Namespace, Name: e.Object.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return false, nil // gone, or its kind is
		}
		return false, fmt.Errorf("reading %s %s/%s: %w", e.Object.Kind, e.Object.Namespace, e.Object.Name, err)
	}
	return string(obj.UID) == e.UID && slices.Contains(obj.Finalizers, e.Finalizer), nil
}

func (s *Starters) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// isStartersFull reports whether err is errStartersFull.
func isStartersFull(err error) bool { return errors.Is(err, errStartersFull) }
