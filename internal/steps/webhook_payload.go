/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// dropAnnotations says which annotations of the target are left out of a
// webhook request, and why:
//   - kubectl.kubernetes.io/last-applied-configuration holds the whole object
//     as last applied: for a Secret, its data in plain text.
//   - Teardown's own annotations (every key under teardown.dev or a subdomain
//     of it, such as progress.finalizer.teardown.dev/ and steps.teardown.dev/)
//     are the controller's bookkeeping, not the receiver's business; they
//     change on every attempt and carry other steps' messages.
func dropAnnotation(key string) bool {
	if key == corev1.LastAppliedConfigAnnotation {
		return true
	}
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	domain := teardownv1alpha1.GroupVersion.Group // teardown.dev
	return prefix == domain || strings.HasSuffix(prefix, "."+domain)
}

// webhookAnnotations is the target's annotations a webhook receives.
func webhookAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if dropAnnotation(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(in))
		}
		out[k] = v
	}
	return out
}

func webhookRequest(pol *policy.Policy, key, step string, t Object) WebhookRequest {
	apiVersion, kind := t.GVK.ToAPIVersionAndKind()
	return WebhookRequest{
		APIVersion: teardownv1alpha1.GroupVersion.String(), Kind: "CleanupRequest",
		Policy:    PolicyRef{Kind: string(pol.Ref.Kind), Namespace: pol.Ref.Namespace, Name: pol.Ref.Name},
		Step:      step,
		Finalizer: key,
		Object: WebhookObject{
			APIVersion: apiVersion, Kind: kind, Namespace: t.Obj.GetNamespace(), Name: t.Obj.GetName(),
			UID: string(t.Obj.GetUID()), Labels: t.Obj.GetLabels(), Annotations: webhookAnnotations(t.Obj.GetAnnotations()),
			DeletionTimestamp: t.Obj.GetDeletionTimestamp(),
		},
	}
}
