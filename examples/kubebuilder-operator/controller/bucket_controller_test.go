/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/bucketapi"
	"github.com/teardown-dev/teardown/examples/kubebuilder-operator/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// apiCall is one call the bucket API answered, with the state of the
// bucket's ConfigMap on the API server when the call arrived.
type apiCall struct {
	Method    string
	Status    int
	ConfigMap string
}

// fixture is one test's namespace, bucket API and running manager.
type fixture struct {
	ns  string
	api *bucketapi.Server

	mu    sync.Mutex
	calls []apiCall
	// steps is what the controller did, in order: its reads of ConfigMaps,
	// its finalizer patches and its bucket creations.
	steps []string
}

// start serves a bucket API with httptest and runs a manager with the
// bucket controller for a new namespace until the test ends.
func start(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ns: testenv.NewNamespace(t, k8s), api: bucketapi.NewServer()}
	ts := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(ts.Close)

	logger, _ := ktesting.NewTestContext(t)
	skipNameValidation := true // one controller per test, all named "bucket"
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Logger:     logger,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Cache:      cache.Options{DefaultNamespaces: map[string]cache.Config{f.ns: {}}},
		Controller: config.Controller{SkipNameValidation: &skipNameValidation},
	})
	if err != nil {
		t.Fatalf("creating the manager: %v", err)
	}
	r := &controller.BucketReconciler{
		Client:  &recordingClient{Client: mgr.GetClient(), step: f.step},
		Buckets: &recordingBuckets{BucketAPI: bucketapi.NewClient(ts.URL, ts.Client()), step: f.step},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("setting up the controller: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return f
}

// serve passes a call to the bucket API, recording the answer and the state
// of the ConfigMap the bucket belongs to when the call arrived.
func (f *fixture) serve(w http.ResponseWriter, r *http.Request) {
	bucket := strings.TrimPrefix(r.URL.Path, "/buckets/")
	ns, name, _ := strings.Cut(bucket, ".")
	state := configMapState(r.Context(), types.NamespacedName{Namespace: ns, Name: name})
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	f.api.ServeHTTP(rec, r)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, apiCall{Method: r.Method, Status: rec.status, ConfigMap: state})
}

// effectiveCalls returns the calls except the harmless repeats an
// idempotent controller may make: a PUT of a bucket that exists (200) and a
// DELETE of one that is gone (404).
func (f *fixture) effectiveCalls() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(f.calls), func(c apiCall) bool {
		return (c.Method == http.MethodPut && c.Status == http.StatusOK) ||
			(c.Method == http.MethodDelete && c.Status == http.StatusNotFound)
	})
}

func (f *fixture) step(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, s)
}

// stepsUntil returns the controller's steps up to the first one that is last.
func (f *fixture) stepsUntil(last string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.steps, last); i >= 0 {
		return slices.Clone(f.steps[:i+1])
	}
	return slices.Clone(f.steps)
}

// recordingClient records the controller's reads of ConfigMaps (and
// whether they showed the finalizer) and its finalizer patches.
type recordingClient struct {
	client.Client
	step func(string)
}

func (c *recordingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Client.Get(ctx, key, obj, opts...)
	if err == nil {
		c.step(fmt.Sprintf("get finalizer=%t", slices.Contains(obj.GetFinalizers(), controller.FinalizerName)))
	}
	return err
}

func (c *recordingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	err := c.Client.Patch(ctx, obj, patch, opts...)
	if err == nil && patch.Type() == types.JSONPatchType { // the library's finalizer writes
		c.step("patch finalizers")
	}
	return err
}

// recordingBuckets records bucket creations among the controller's steps.
type recordingBuckets struct {
	controller.BucketAPI
	step func(string)
}

func (b *recordingBuckets) Create(ctx context.Context, name string) (bool, error) {
	b.step("create bucket")
	return b.BucketAPI.Create(ctx, name)
}

func configMapState(ctx context.Context, key types.NamespacedName) string {
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "absent"
		}
		return "error: " + err.Error()
	}
	progress := "none"
	for _, p := range finalizer.ReadProgress(cm) {
		progress = string(p.State)
	}
	return fmt.Sprintf("finalizer=%t deleting=%t progress=%s",
		slices.Contains(cm.Finalizers, controller.FinalizerName), cm.DeletionTimestamp != nil, progress)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func bucketConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ns, Labels: map[string]string{controller.BucketLabel: "true"},
	}}
	if err := k8s.Create(t.Context(), cm); err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (f *fixture) waitForBucket(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "bucket "+controller.BucketName(cm), func(context.Context) (bool, error) {
		return f.api.Exists(controller.BucketName(cm)), nil
	})
}

func waitGone(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "ConfigMap "+cm.Name+" to be gone", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// TestBucketLifecycle: a bucket ConfigMap gets the finalizer, then, in a
// later reconcile that observed it, its bucket; deleting it deletes the bucket while the ConfigMap
// is still held, then the ConfigMap goes.
func TestBucketLifecycle(t *testing.T) {
	testenv.SkipShort(t)
	f := start(t)
	cm := bucketConfigMap(t, f.ns, "photos")
	f.waitForBucket(t, cm)

	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.Finalizers, controller.FinalizerName) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, controller.FinalizerName)
	}
	// The reconcile that added the finalizer stopped there; the bucket was
	// created by the next one, which read the ConfigMap with the finalizer.
	wantSteps := []string{"get finalizer=false", "patch finalizers", "get finalizer=true", "create bucket"}
	if diff := cmp.Diff(wantSteps, f.stepsUntil("create bucket")); diff != "" {
		t.Errorf("controller steps until the bucket was created (-want +got):\n%s", diff)
	}

	if err := k8s.Delete(t.Context(), cm); err != nil {
		t.Fatalf("deleting the ConfigMap: %v", err)
	}
	waitGone(t, cm)

	want := []apiCall{
		// Created only once the ConfigMap carried the finalizer.
		{Method: http.MethodPut, Status: http.StatusCreated, ConfigMap: "finalizer=true deleting=false progress=none"},
		// Deleted while the finalizer still held the ConfigMap.
		{Method: http.MethodDelete, Status: http.StatusNoContent, ConfigMap: "finalizer=true deleting=true progress=none"},
	}
	if diff := cmp.Diff(want, f.effectiveCalls()); diff != "" {
		t.Errorf("bucket API calls (-want +got):\n%s", diff)
	}
	name := controller.BucketName(cm)
	if f.api.Exists(name) {
		t.Errorf("bucket %s still exists", name)
	}
	if diff := cmp.Diff(bucketapi.Stats{Creates: 1, Deletes: 1}, f.api.Stats(name), effects); diff != "" {
		t.Errorf("bucket %s effects (-want +got):\n%s", name, diff)
	}
}

// TestBucketDeleteRetriedUntilAPIRecovers: the bucket API fails the first
// two deletes; the ConfigMap stays, Terminating with a Retry progress
// record, until a delete succeeds, and the bucket is deleted exactly once.
func TestBucketDeleteRetriedUntilAPIRecovers(t *testing.T) {
	testenv.SkipShort(t)
	f := start(t)
	cm := bucketConfigMap(t, f.ns, "logs")
	f.waitForBucket(t, cm)

	f.api.FailNextDeletes(2)
	if err := k8s.Delete(t.Context(), cm); err != nil {
		t.Fatalf("deleting the ConfigMap: %v", err)
	}
	waitGone(t, cm)

	want := []apiCall{
		{Method: http.MethodPut, Status: http.StatusCreated, ConfigMap: "finalizer=true deleting=false progress=none"},
		{Method: http.MethodDelete, Status: http.StatusServiceUnavailable, ConfigMap: "finalizer=true deleting=true progress=none"},
		// The failure is recorded on the ConfigMap, which is still held.
		{Method: http.MethodDelete, Status: http.StatusServiceUnavailable, ConfigMap: "finalizer=true deleting=true progress=Retry"},
		{Method: http.MethodDelete, Status: http.StatusNoContent, ConfigMap: "finalizer=true deleting=true progress=Retry"},
	}
	if diff := cmp.Diff(want, f.effectiveCalls()); diff != "" {
		t.Errorf("bucket API calls (-want +got):\n%s", diff)
	}
	name := controller.BucketName(cm)
	if f.api.Exists(name) {
		t.Errorf("bucket %s still exists", name)
	}
	if diff := cmp.Diff(bucketapi.Stats{Creates: 1, Deletes: 1, FailedDeletes: 2}, f.api.Stats(name), effects); diff != "" {
		t.Errorf("bucket %s effects (-want +got):\n%s", name, diff)
	}
}

// TestLabelRemovedReleasesConfigMap: a ConfigMap that stops being a bucket
// has its bucket deleted and the finalizer removed, so it is never left
// holding a finalizer nobody will remove.
func TestLabelRemovedReleasesConfigMap(t *testing.T) {
	testenv.SkipShort(t)
	f := start(t)
	cm := bucketConfigMap(t, f.ns, "scratch")
	f.waitForBucket(t, cm)

	unlabel := []byte(`{"metadata":{"labels":{"` + controller.BucketLabel + `":null}}}`)
	if err := k8s.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, unlabel)); err != nil {
		t.Fatalf("removing the label: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "the finalizer to be removed", func(ctx context.Context) (bool, error) {
		got := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return false, err
		}
		return !slices.Contains(got.Finalizers, controller.FinalizerName), nil
	})
	name := controller.BucketName(cm)
	if f.api.Exists(name) {
		t.Errorf("bucket %s still exists after the label was removed", name)
	}
	if diff := cmp.Diff(bucketapi.Stats{Creates: 1, Deletes: 1}, f.api.Stats(name), effects); diff != "" {
		t.Errorf("bucket %s effects (-want +got):\n%s", name, diff)
	}
}

// TestUnlabelledConfigMapIsIgnored: ConfigMaps without the label get no
// finalizer and no bucket.
func TestUnlabelledConfigMapIsIgnored(t *testing.T) {
	testenv.SkipShort(t)
	f := start(t)
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: f.ns}}
	if err := k8s.Create(t.Context(), plain); err != nil {
		t.Fatal(err)
	}
	// Once a bucket ConfigMap created after it is handled, the controller
	// has seen both.
	f.waitForBucket(t, bucketConfigMap(t, f.ns, "marker"))

	got := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(plain), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 {
		t.Errorf("unlabelled ConfigMap finalizers = %v, want none", got.Finalizers)
	}
	if f.api.Exists(controller.BucketName(plain)) {
		t.Errorf("unlabelled ConfigMap got a bucket")
	}
}

// effects compares only what happened to a bucket, not how many calls it
// took: an idempotent controller may repeat a call.
var effects = cmp.FilterPath(func(p cmp.Path) bool {
	name := p.Last().String()
	return name == ".CreateCalls" || name == ".DeleteCalls"
}, cmp.Ignore())
