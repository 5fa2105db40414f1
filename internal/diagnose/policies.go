/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseTeardownStep = "TeardownPolicyStep"
)

// Policy is a TeardownPolicy or ClusterTeardownPolicy, read without the
// Go types so the engine works with any served version.
type Policy struct {
	Ref       ObjectRef
	Finalizer string
	Steps     []string
	// UnusedSteps names the steps that are unused steps (kubectl teardown
	// plan says who would hold the object).
	UnusedSteps []string
	// Refused are the objects it selects on which the API server refuses
	// the controller's writes (status.refusedObjects, refused.go).
	Refused []RefusedObject
	// Cycles are the objects its status.blockedObjects says wait in a
	// cycle of cleanups (diagnosis cause WaitCycle, waitcycle.go).
	Cycles []BlockedCycle
}

// BlockedCycle is an entry of a policy's status.blockedObjects whose
// diagnosis is a WaitCycle: the controller's words, as it wrote them for
// the policy's readers.
type BlockedCycle struct {
	Object, Blocker      ObjectRef
	Step, Message, Since string
}

// RefusedObject is an entry of a policy's status.refusedObjects.
type RefusedObject struct {
	Object                 ObjectRef
	Reason, Message, Since string
}

var (
	gvrPolicy        = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "teardownpolicies"}
	gvrClusterPolicy = schema.GroupVersionResource{Group: "teardown.dev", Version: "v1alpha1", Resource: "clusterteardownpolicies"}
)

// Policies are the Teardown policies of the cluster, read once per run.
func Policies(ctx context.Context, c *kube.Cluster) []Policy {
	return kube.Memo(c, "policies", func() []Policy {
		var out []Policy
		for _, gvr := range []schema.GroupVersionResource{gvrPolicy, gvrClusterPolicy} {
			l, err := c.Objects(ctx, gvr, "")
			if err != nil {
				continue
			}
			for _, p := range l {
				fin, _, _ := unstructured.NestedString(p.Object, "spec", "finalizer")
				if fin == "" {
					fin, _, _ = unstructured.NestedString(p.Object, "status", "finalizer")
				}
				steps, _, _ := unstructured.NestedSlice(p.Object, "spec", "steps")
				var names, unused []string
				for _, s := range steps {
					if m, ok := s.(map[string]any); ok {
						if n, ok := m["name"].(string); ok {
							names = append(names, n)
							if _, ok := m["unused"]; ok {
								unused = append(unused, n)
							}
						}
					}
				}
				out = append(out, Policy{
					Ref:       ObjectRef{APIVersion: p.GetAPIVersion(), Kind: p.GetKind(), Resource: gvr.Resource, Namespace: p.GetNamespace(), Name: p.GetName()},
					Finalizer: fin, Steps: names, UnusedSteps: unused, Refused: refusedObjects(p.Object), Cycles: blockedCycles(p.Object),
				})
			}
		}
		return out
	})
}

// refusedObjects reads a policy's status.refusedObjects.
func refusedObjects(p map[string]any) []RefusedObject {
	l, _, _ := unstructured.NestedSlice(p, "status", "refusedObjects")
	out := make([]RefusedObject, 0, len(l))
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		str := func(fields ...string) string { v, _, _ := unstructured.NestedString(m, fields...); return v }
		out = append(out, RefusedObject{
			Object: ObjectRef{APIVersion: str("object", "apiVersion"), Kind: str("object", "kind"), Namespace: str("object", "namespace"), Name: str("object", "name")},
			Reason: str("reason"), Message: str("message"), Since: str("since"),
		})
	}
	return out
}

// blockedCycles reads the entries of a policy's status.blockedObjects
// whose diagnosis is a WaitCycle.
func blockedCycles(p map[string]any) []BlockedCycle {
	l, _, _ := unstructured.NestedSlice(p, "status", "blockedObjects")
	var out []BlockedCycle
	for _, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		str := func(fields ...string) string { v, _, _ := unstructured.NestedString(m, fields...); return v }
		if str("diagnosis", "cause") != CauseWaitCycle {
			continue
		}
		ref := func(at string) ObjectRef {
			return ObjectRef{APIVersion: str(at, "apiVersion"), Kind: str(at, "kind"), Namespace: str(at, "namespace"), Name: str(at, "name")}
		}
		b := BlockedCycle{Object: ref("object"), Step: str("step"), Message: str("diagnosis", "message"), Since: str("diagnosis", "since")}
		if _, found, _ := unstructured.NestedMap(m, "diagnosis", "blocker"); found {
			b.Blocker = ObjectRef{APIVersion: str("diagnosis", "blocker", "apiVersion"), Kind: str("diagnosis", "blocker", "kind"),
				Namespace: str("diagnosis", "blocker", "namespace"), Name: str("diagnosis", "blocker", "name")}
		}
		out = append(out, b)
	}
	return out
}
