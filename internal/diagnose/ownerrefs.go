/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Causes of this family (see report.go).
const (
	CauseDanglingOwnerReference       = "DanglingOwnerReference"       // E4
	CauseCrossNamespaceOwnerReference = "CrossNamespaceOwnerReference" // E4
	CauseInvalidOwnerReference        = "InvalidOwnerReference"        // E4
)

// ownerRefFindings: E4 for the target.
func (e *Explainer) ownerRefFindings(ctx context.Context, t Target, obj metav1.Object) []Finding {
	var out []Finding
	ref := t.Ref()
	for _, or := range obj.GetOwnerReferences() {
		gv, err := schema.ParseGroupVersion(or.APIVersion)
		owner := fmt.Sprintf("%s %s (uid %s)", or.Kind, or.Name, or.UID)
		var mapping *kube.Mapping
		if err == nil {
			mapping = e.c.MapKind(gv.WithKind(or.Kind))
		}
		if mapping == nil {
			out = append(out, Finding{Cause: CauseInvalidOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
				Message:  fmt.Sprintf("ownerReference to %s: the kind %s is not served, so the garbage collector retries this object forever and never collects it", owner, or.APIVersion),
				FixOwner: "controller author", Remedy: "remove or fix the ownerReference"})
			continue
		}
		if mapping.Namespaced && !t.Namespaced {
			out = append(out, Finding{Cause: CauseInvalidOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
				Message:  fmt.Sprintf("ownerReference to namespaced %s from a cluster-scoped object: the garbage collector never collects it", owner),
				FixOwner: "controller author", Remedy: "remove the ownerReference; clean the object up explicitly"})
			continue
		}
		ns := ""
		if mapping.Namespaced {
			ns = obj.GetNamespace()
		}
		got, err := e.c.MetaGet(ctx, mapping.GVR, ns, or.Name)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err == nil && got.UID == or.UID {
			continue
		}
		if mapping.Namespaced {
			if other := e.c.FindByUID(ctx, mapping, or.UID); other != "" {
				out = append(out, Finding{Cause: CauseCrossNamespaceOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
					Message:  fmt.Sprintf("ownerReference to %s, which lives in namespace %s: owners must be in the same namespace, so the garbage collector treats it as absent and deletes this object (event OwnerRefInvalidNamespace)", owner, other),
					FixOwner: "controller author", Remedy: "owner references cannot cross namespaces: use a label or annotation link and explicit cleanup instead"})
				continue
			}
		}
		why := "does not exist"
		if err == nil {
			why = fmt.Sprintf("exists with a different uid (%s)", got.UID)
		}
		out = append(out, Finding{Cause: CauseDanglingOwnerReference, Catalog: "E4", Severity: SeverityWarning, Object: &ref,
			Message:  fmt.Sprintf("ownerReference to %s, which %s: the garbage collector treats it as absent and deletes this object if no other owner remains", owner, why),
			FixOwner: "controller author", Remedy: "remove the ownerReference if the object must survive; otherwise expect it to be collected"})
	}
	return out
}
