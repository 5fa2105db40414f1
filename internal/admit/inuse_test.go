/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

const (
	ns         = "shop"
	clusterKey = "teardown.dev/uninstall"
)

func inUseScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := teardownv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func clusterPolicy(name string, steps []teardownv1alpha1.Step, kinds ...string) *teardownv1alpha1.ClusterTeardownPolicy {
	p := &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: teardownv1alpha1.TeardownPolicySpec{Steps: steps}}
	for _, k := range kinds {
		p.Spec.Targets = append(p.Spec.Targets, teardownv1alpha1.Target{APIVersion: "v1", Kind: k})
	}
	return p
}

var (
	unusedSteps = []teardownv1alpha1.Step{{Name: "pods-gone", Unused: &teardownv1alpha1.UnusedAction{}}}
	deleteSteps = []teardownv1alpha1.Step{{Name: "rm", Delete: &teardownv1alpha1.DeleteAction{}}}
)

// terminatingObj is a Secret, ConfigMap or ServiceAccount of ns being
// deleted, held by keys.
func terminatingObj(obj client.Object, name string, keys ...string) client.Object {
	obj.SetNamespace(ns)
	obj.SetName(name)
	obj.SetFinalizers(keys)
	if len(keys) > 0 {
		now := metav1.Now()
		obj.SetDeletionTimestamp(&now)
	}
	return obj
}

func secretVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
}

func request(t *testing.T, op admissionv1.Operation, sub string, pod, old *corev1.Pod) admission.Request {
	t.Helper()
	raw := func(p *corev1.Pod) runtime.RawExtension {
		if p == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: ns, Operation: op, SubResource: sub,
		Object: raw(pod), OldObject: raw(old),
	}}
}

func TestInUse(t *testing.T) {
	podUsing := func(secrets ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.PodSpec{ServiceAccountName: "web", Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}}
		for _, s := range secrets {
			p.Spec.Volumes = append(p.Spec.Volumes, secretVolume(s))
		}
		return p
	}
	debugged := func(pod *corev1.Pod, secret string) *corev1.Pod {
		p := pod.DeepCopy()
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}},
		}}}
		return p
	}
	unusedPolicy := clusterPolicy("uninstall", unusedSteps, "Secret", "ServiceAccount")
	for _, tc := range []struct {
		name       string
		objs       []client.Object
		req        func(t *testing.T) admission.Request
		getErr     error
		failClosed bool
		// wantDenied is a part of the refusal; empty: admitted.
		wantDenied string
		wantGets   int32
		wantWarn   bool
	}{{
		name: "a pod that would use a held Secret being deleted is refused",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
		// The ServiceAccount web and the Secret creds.
		wantGets:   2,
		wantDenied: `Secret "creds" is being deleted: a teardown policy's unused step keeps it only until the pods that already use it are gone`,
	}, {
		name: "a live Secret is no reason to refuse",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "creds")},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
		wantGets: 2,
	}, {
		name: "a missing Secret is the kubelet's business",
		objs: []client.Object{unusedPolicy},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		}, wantGets: 2,
	}, {
		name: "a pod's default ServiceAccount being deleted",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.ServiceAccount{}, "default", clusterKey)},
		req: func(t *testing.T) admission.Request {
			p := podUsing()
			p.Spec.ServiceAccountName = ""
			return request(t, admissionv1.Create, "", p, nil)
		},
		wantGets: 1, wantDenied: `ServiceAccount "default" is being deleted`,
	}, {
		name: "every held object is named",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "a", clusterKey), terminatingObj(&corev1.Secret{}, "b", clusterKey),
			terminatingObj(&corev1.Secret{}, "c")},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("a", "b", "c"), nil)
		},
		wantGets: 4, wantDenied: `Secret "a", Secret "b" are being deleted: a teardown policy's unused step keeps them only`,
	}, {
		name: "a Secret held by a policy without an unused step is admitted",
		objs: []client.Object{clusterPolicy("uninstall", deleteSteps, "Secret"), terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
	}, {
		name: "only the kinds unused steps target are read",
		objs: []client.Object{clusterPolicy("uninstall", unusedSteps, "ConfigMap"), terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
	}, {
		name: "a TeardownPolicy of the pod's namespace holds",
		objs: []client.Object{
			&teardownv1alpha1.TeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, Spec: teardownv1alpha1.TeardownPolicySpec{
				Steps: unusedSteps, Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Secret"}}}},
			terminatingObj(&corev1.Secret{}, "creds", "shop.teardown.dev/creds"),
		},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
		wantGets: 1, wantDenied: `Secret "creds" is being deleted`,
	}, {
		name: "a debug container that gains a held Secret is refused",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Update, "ephemeralcontainers", debugged(podUsing(), "creds"), podUsing())
		},
		wantGets: 1, wantDenied: `Secret "creds" is being deleted`,
	}, {
		name: "a debug container in a pod that already used it is admitted",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Update, "ephemeralcontainers", debugged(podUsing("creds"), "creds"), podUsing("creds"))
		},
	}, {
		name: "other updates are not checked",
		objs: []client.Object{unusedPolicy, terminatingObj(&corev1.Secret{}, "creds", clusterKey)},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Update, "", podUsing("creds"), podUsing("creds"))
		},
	}, {
		name: "a read that fails admits with a warning",
		objs: []client.Object{unusedPolicy},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
		getErr:   errors.New("etcdserver: request timed out"),
		wantGets: 2, wantWarn: true,
	}, {
		name: "a read that fails refuses when failing closed",
		objs: []client.Object{unusedPolicy},
		req: func(t *testing.T) admission.Request {
			return request(t, admissionv1.Create, "", podUsing("creds"), nil)
		},
		getErr:     errors.New("etcdserver: request timed out"),
		failClosed: true,
		wantGets:   2, wantDenied: "could not check whether an object this pod uses is being deleted by a teardown policy: reading",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var gets atomic.Int32
			c := fake.NewClientBuilder().WithScheme(inUseScheme(t)).WithObjects(tc.objs...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					gets.Add(1)
					if tc.getErr != nil {
						return tc.getErr
					}
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			u := &InUse{Client: c, Reader: c, FailClosed: tc.failClosed}
			resp := u.Handle(t.Context(), tc.req(t))
			got := ""
			if !resp.Allowed {
				got = resp.Result.Message
			}
			if tc.wantDenied == "" && got != "" || !strings.Contains(got, tc.wantDenied) {
				t.Errorf("refusal = %q, want one containing %q", got, tc.wantDenied)
			}
			if !resp.Allowed && resp.Result.Code != 403 {
				t.Errorf("refused with code %d, want 403 as NamespaceLifecycle", resp.Result.Code)
			}
			if diff := cmp.Diff(tc.wantGets, gets.Load()); diff != "" {
				t.Errorf("reads from the API server (-want +got):\n%s", diff)
			}
			if got := len(resp.Warnings) > 0; got != tc.wantWarn {
				t.Errorf("warnings %v, want some: %v", resp.Warnings, tc.wantWarn)
			}
		})
	}
}

// TestInUseRefusalNamesOnlyThePodsNamespace: the message names what the pod
// references (its own namespace's objects), never the policy or its key.
func TestInUseRefusalNamesOnlyThePodsNamespace(t *testing.T) {
	msg := refusal([]reference{{gk: heldKinds[0], name: "creds"}})
	for _, leak := range []string{"uninstall", clusterKey, "ClusterTeardownPolicy"} {
		if strings.Contains(msg, leak) {
			t.Errorf("refusal %q names %q", msg, leak)
		}
	}
}
