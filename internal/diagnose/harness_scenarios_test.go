/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// deleting is object metadata deleted ago before testNow, with finalizers.
func deleting(ns, name string, ago time.Duration, finalizers ...string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Finalizers: finalizers,
		DeletionTimestamp: &metav1.Time{Time: testNow.Add(-ago)}, CreationTimestamp: metav1.Time{Time: testNow.Add(-24 * time.Hour)}}
}

// TestFakeOwnerFamily runs the owner family (B1/B5) on the fake harness: a
// Service's finalizer whose owner is gone, or was never installed, is the
// root blocker; one whose owner runs is waited on.
func TestFakeOwnerFamily(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: deleting("shop", "web", 10*time.Minute, "dns.example.com/records"),
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	svc.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "dns-operator", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{"v:\"dns.example.com/records\"":{}}}}`)}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	operator := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "dns-operator", Namespace: "dns-system"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "example.com/dns-operator:v1", Command: []string{"/dns-operator"}}}}}},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}}
	cases := map[string]struct {
		objs      []runtime.Object
		wantRoots []string
		blocked   bool
	}{
		"owner deployment missing": {objs: []runtime.Object{ns, svc}, wantRoots: []string{CauseOwnerGone}, blocked: true},
		"owner runs":               {objs: []runtime.Object{ns, svc, operator}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep := explainFake(t, testNow, svc, tc.objs...)
			if diff := cmp.Diff(tc.wantRoots, rootCauses(rep)); diff != "" || rep.Blocked != tc.blocked {
				var b strings.Builder
				RenderReport(&b, rep, Palette{})
				t.Errorf("root causes (-want +got):\n%s\nblocked = %t, want %t\n%s", diff, rep.Blocked, tc.blocked, b.String())
			}
		})
	}
}
