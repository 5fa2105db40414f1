/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// evictionRefused asks the API server whether it would evict pod now, with
// a server-side dry-run of the eviction a drain sends (POST
// pods/eviction?dryRun=All: the API server runs every check, the budget's
// included, and changes nothing). It returns the API server's own words
// when it refuses with 429 Too Many Requests, which is what a
// PodDisruptionBudget allowing no disruption answers; ok is false when the
// question could not be asked (no right to create evictions: a read-only
// user) or got another answer.
func (e *Explainer) evictionRefused(ctx context.Context, pod *corev1.Pod) (why string, refused, ok bool) {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}
	err := e.c.kube.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).SubResource("eviction").
		Param("dryRun", metav1.DryRunAll).Body(ev).Do(ctx).Error()
	switch {
	case err == nil:
		return "", false, true
	case !apierrors.IsTooManyRequests(err):
		return "", false, false
	}
	var causes []string
	if st, isStatus := err.(apierrors.APIStatus); isStatus && st.Status().Details != nil {
		for _, c := range st.Status().Details.Causes {
			if c.Message != "" {
				causes = append(causes, c.Message)
			}
		}
	}
	why = err.Error()
	if len(causes) > 0 {
		why += " (" + strings.Join(causes, "; ") + ")"
	}
	return cleanText(why, maxSaid), true, true
}

// evictionsRefused is what the API server answers to the eviction of each
// of pods, as "pod: words", for those it refuses.
func (e *Explainer) evictionsRefused(ctx context.Context, pods []corev1.Pod, names []string) []string {
	var out []string
	for i := range pods {
		if !containsString(names, pods[i].Name) {
			continue
		}
		if why, refused, ok := e.evictionRefused(ctx, &pods[i]); ok && refused {
			out = append(out, pods[i].Name+": "+why)
		}
	}
	return out
}
