/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// carried returns what the policy's status.blockedObjects already says of
// obj: the diagnosis a previous leader (or this process before a restart)
// found and the policy's status kept. A diagnosis the Diagnoser finds for
// the first time in this process is news only if it differs from that one:
// a failover must not restart its since nor put one more TerminationBlocked
// Event on every stuck object. Nil when there is none or it cannot be read.
func (x *Diagnoser) carried(ctx context.Context, ref policy.Ref, obj *metav1.PartialObjectMetadata) *teardownv1alpha1.Diagnosis {
	if x.Policies == nil {
		return nil
	}
	var status *teardownv1alpha1.TeardownPolicyStatus
	key := client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}
	var err error
	switch ref.Kind {
	case policy.KindNamespaced:
		p := &teardownv1alpha1.TeardownPolicy{}
		err, status = x.Policies.Get(ctx, key, p), &p.Status
	case policy.KindCluster:
		p := &teardownv1alpha1.ClusterTeardownPolicy{}
		err, status = x.Policies.Get(ctx, key, p), &p.Status
	default:
		return nil
	}
	if err != nil {
		logf.FromContext(ctx).V(1).Info("Could not read the policy's earlier diagnoses", "policy", ref.String(), "err", err.Error())
		return nil
	}
	return RecordedDiagnosis(status.BlockedObjects, obj.GroupVersionKind(), obj)
}

// RecordedDiagnosis returns the diagnosis blocked (a policy's
// status.blockedObjects) holds for obj of kind gvk, if it was found since
// obj's deletion began: status names objects without their UID, and an
// entry older than that was about an earlier object of the same name.
func RecordedDiagnosis(blocked []teardownv1alpha1.BlockedObject, gvk schema.GroupVersionKind, obj metav1.Object) *teardownv1alpha1.Diagnosis {
	deleted := obj.GetDeletionTimestamp()
	if deleted == nil {
		return nil
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	for _, b := range blocked {
		if b.Diagnosis != nil && b.Object.Kind == kind && b.Object.APIVersion == apiVersion &&
			b.Object.Namespace == obj.GetNamespace() && b.Object.Name == obj.GetName() &&
			!b.Diagnosis.Since.Time.Before(deleted.Truncate(time.Second)) {
			return b.Diagnosis.DeepCopy()
		}
	}
	return nil
}

// Judged is true when this process diagnosed the cleanup under key of the
// object uid (found a cause or not), and always when diagnosis is off: until
// then, status keeps the diagnosis an earlier leader recorded
// (RecordedDiagnosis) rather than drop it at the first status refresh.
func (x *Diagnoser) Judged(key string, uid types.UID) bool {
	return x == nil || x.known(diagKey{key, uid})
}

// carries reports whether c, found in status, is d: the same cause about
// the same blocker.
func (d diagnosis) carries(c *teardownv1alpha1.Diagnosis) bool {
	return c != nil && d.cause == c.Cause && d.catalog == c.Catalog && refString(d.blocker) == refString(c.Blocker)
}
