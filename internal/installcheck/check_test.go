/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package installcheck

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

var (
	env     *testenv.Env
	clients Clients
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{TeardownCRDs: true}, func(e *testenv.Env) {
		env = e
		var err error
		if clients, err = NewClients(e.Config); err != nil {
			panic(err)
		}
	})
}

// byName returns the result of the check called name.
func byName(t *testing.T, results []Result, name string) Result {
	t.Helper()
	for _, r := range results {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no check %q in %+v", name, results)
	return Result{}
}

// expect runs the checks until check name has the outcome wanted (the API
// server's caches take a moment), or fails with the last result.
func expect(t *testing.T, name string, failed bool, detail string) Result {
	t.Helper()
	var last Result
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		last = byName(t, Run(ctx, clients, Options{}), name)
		return last.Failed == failed && strings.Contains(last.Detail, detail), nil
	})
	if err != nil {
		t.Fatalf("check %s: got failed=%v %q, want failed=%v and %q", name, last.Failed, last.Detail, failed, detail)
	}
	return last
}

// The checks against a real API server, from nothing installed but the CRDs
// to a working install, each broken part named. One test: the steps build
// on each other as an install does.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	testenv.SkipShort(t)
	testenv.SkipShort(t)
	ctx := t.Context()
	kube := clients.Kube
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The CRDs alone.
	expect(t, "CRDs", false, "established and served (teardown.dev/v1alpha1)")
	expect(t, "admission policies", true, "ValidatingAdmissionPolicy teardown-protect-finalizers: not found")
	expect(t, "controller", true, "no Lease teardown-system/teardown-controller.teardown.dev")
	expect(t, "attach webhook", false, "not enabled")
	if Failed([]Result{byName(t, Run(ctx, clients, Options{}), "in-use webhook")}) {
		t.Error("the in-use webhook, not installed, failed the check")
	}

	// The admission policies as shipped, one binding left out, then all.
	objs := shippedAdmissionPolicies(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	var held *unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == "ValidatingAdmissionPolicyBinding" && obj.GetName() == "teardown-protect-records" {
			held = obj
			continue
		}
		create(t, dyn, obj)
	}
	expect(t, "admission policies", true, "ValidatingAdmissionPolicyBinding teardown-protect-records: not found (the policy is installed but not enforced)")
	create(t, dyn, held)
	expect(t, "admission policies", false, "4 policies bound with Deny")

	// A real controller leading, then stopped: it lets the Lease go.
	mgr, err := controller.NewManager(env.Config, controller.ManagerOptions{
		Controller: controller.DefaultOptions(), LeaderElection: true, LeaderElectionNamespace: DefaultNamespace,
		Logger: logr.Discard(),
	})
	if err != nil {
		t.Fatal(err)
	}
	mgrCtx, stopManager := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	expect(t, "controller", false, "leads (Lease teardown-system/teardown-controller.teardown.dev renewed")
	stopManager()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the manager: %v", err)
	}
	expect(t, "controller", true, "has no holder: no controller leads")

	// A leader that stopped renewing, as a killed pod leaves it.
	lease, err := kube.CoordinationV1().Leases(DefaultNamespace).Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lease.Spec.HolderIdentity = ptr.To("teardown-controller-abc_1")
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Minute)}
	if lease, err = kube.CoordinationV1().Leases(DefaultNamespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "controller", true, "last renewed Lease teardown-system/teardown-controller.teardown.dev 1m0s ago, longer than its")

	// RunUntil waits for a leader that comes back.
	go func() {
		time.Sleep(3 * time.Second)
		lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := kube.CoordinationV1().Leases(DefaultNamespace).Update(context.Background(), lease, metav1.UpdateOptions{}); err != nil {
			t.Errorf("renewing the Lease: %v", err)
		}
	}()
	start := time.Now()
	results := RunUntil(ctx, clients, Options{}, time.Minute)
	if r := byName(t, results, "controller"); r.Failed || time.Since(start) > 30*time.Second {
		t.Errorf("RunUntil after %s: %+v, want the controller passing within seconds of the renewal", time.Since(start), r)
	}

	// A Deployment that is not ready fails the check; ready, it passes.
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: DeploymentName, Namespace: DefaultNamespace, Labels: map[string]string{versionLabel: "v0.2.0"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "example.invalid/x"}}},
			},
		},
	}
	if deploy, err = kube.AppsV1().Deployments(DefaultNamespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "controller", true, "Deployment teardown-system/teardown-controller has no ready replica")
	deploy.Status.Replicas, deploy.Status.ReadyReplicas = 2, 1
	if _, err = kube.AppsV1().Deployments(DefaultNamespace).UpdateStatus(ctx, deploy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "controller", false, "Deployment teardown-controller 1/2 ready")

	// The CRDs of another release than the controller's.
	crd, err := clients.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, CRDs[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crd.Labels = map[string]string{versionLabel: "v0.1.0"}
	if _, err := clients.APIExtensions.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "versions", true, "the CRDs are of v0.1.0 but the controller of v0.2.0")

	// The attach webhook: no CA bundle, then no ready endpoint, then one.
	webhooks := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	config := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: AttachWebhookConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "attach.teardown.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: DefaultNamespace, Name: "teardown-controller-webhook", Path: ptr.To("/attach"),
			}},
			// Nothing is ever sent to it: no rule matches.
			Rules:                   nil,
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		}},
	}
	if config, err = webhooks.Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "attach webhook", true, "has a webhook without a caBundle")
	config.Webhooks[0].ClientConfig.CABundle = []byte("-----BEGIN CERTIFICATE-----\n")
	if _, err = webhooks.Update(ctx, config, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "attach webhook", true, "Service teardown-system/teardown-controller-webhook of teardown-attach-finalizers has no ready endpoint")
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "teardown-controller-webhook-1", Namespace: DefaultNamespace, Labels: map[string]string{discoveryv1.LabelServiceName: "teardown-controller-webhook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}},
	}
	if slice, err = kube.DiscoveryV1().EndpointSlices(DefaultNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "attach webhook", true, "has no ready endpoint")
	slice.Endpoints[0].Conditions.Ready = ptr.To(true)
	if _, err = kube.DiscoveryV1().EndpointSlices(DefaultNamespace).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(t, "attach webhook", false, "Service teardown-system/teardown-controller-webhook has 1 ready endpoint")
}

// shippedAdmissionPolicies reads config/admission's policies and bindings.
func shippedAdmissionPolicies(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "admission", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if strings.HasPrefix(obj.GetKind(), "ValidatingAdmissionPolicy") {
				out = append(out, obj)
			}
		}
		_ = f.Close()
	}
	if len(out) != 2*len(AdmissionPolicies) {
		t.Fatalf("config/admission holds %d policies and bindings, want %d", len(out), 2*len(AdmissionPolicies))
	}
	return out
}

func create(t *testing.T, dyn dynamic.Interface, obj *unstructured.Unstructured) {
	t.Helper()
	res := "validatingadmissionpolicies"
	if obj.GetKind() == "ValidatingAdmissionPolicyBinding" {
		res = "validatingadmissionpolicybindings"
	}
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: res}
	if _, err := dyn.Resource(gvr).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}
