/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func TestValidateName(t *testing.T) {
	testenv.SkipShort(t)
	cases := map[string]struct {
		name    string
		wantErr string
	}{
		"domain-qualified":      {name: "example.com/cleanup"},
		"custom domain":         {name: "my.custom/finalizer"},
		"no prefix":             {name: "cleanup", wantErr: "must be domain-qualified"},
		"prefix without a dot":  {name: "teardown/cleanup", wantErr: "must be domain-qualified"},
		"built-in kubernetes":   {name: "kubernetes", wantErr: "must be domain-qualified"},
		"empty":                 {name: "", wantErr: "invalid finalizer name"},
		"bad characters":        {name: "example.com/clean up", wantErr: "invalid finalizer name"},
		"uppercase prefix":      {name: "Example.com/cleanup", wantErr: "invalid finalizer name"},
		"name part too long":    {name: "example.com/" + strings.Repeat("a", 64), wantErr: "invalid finalizer name"},
		"two slashes":           {name: "example.com/a/b", wantErr: "invalid finalizer name"},
		"trailing slash":        {name: "example.com/", wantErr: "invalid finalizer name"},
		"kubernetes.io allowed": {name: "kubernetes.io/pv-protection"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := finalizer.ValidateName(tc.name)
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("ValidateName(%q) = %v, want nil", tc.name, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValidateName(%q) = %v, want an error containing %q", tc.name, err, tc.wantErr)
			}
		})
	}
}

func TestRegisterRejectsBadInput(t *testing.T) {
	testenv.SkipShort(t)
	done := finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result { return finalizer.Done() })
	cases := map[string]struct {
		name    string
		handler finalizer.Handler
		opts    []finalizer.RegisterOption
		wantErr string
	}{
		"unqualified name":  {name: "cleanup", handler: done, wantErr: "must be domain-qualified"},
		"nil handler":       {name: "example.com/x", handler: nil, wantErr: "handler is nil"},
		"duplicate":         {name: "example.com/dup", handler: done, wantErr: "already registered"},
		"bad attach":        {name: "example.com/a", handler: done, opts: []finalizer.RegisterOption{finalizer.WithAttach("Sometimes")}, wantErr: `attach must be Automatic or Declared, not "Sometimes"`},
		"bad expiry":        {name: "example.com/b", handler: done, opts: []finalizer.RegisterOption{finalizer.WithDeadline(time.Minute, "Explode")}, wantErr: "on expiry must be Block or Release"},
		"zero timeout":      {name: "example.com/c", handler: done, opts: []finalizer.RegisterOption{finalizer.WithAttemptTimeout(0)}, wantErr: "attempt timeout must be positive"},
		"negative deadline": {name: "example.com/d", handler: done, opts: []finalizer.RegisterOption{finalizer.WithDeadline(-time.Second, finalizer.ExpiryBlock)}, wantErr: "deadline must not be negative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := finalizer.New(finalizer.ForClient(k8s, nil))
			if err := f.Register("example.com/dup", done); err != nil {
				t.Fatal(err)
			}
			err := f.Register(tc.name, tc.handler, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Register = %v, want an error containing %q", err, tc.wantErr)
			}
			if got := f.Names(); !slices.Equal(got, []string{"example.com/dup"}) {
				t.Errorf("registered %v after a refused Register", got)
			}
		})
	}
}

func TestReconcileRejectsNilObjects(t *testing.T) {
	testenv.SkipShort(t)
	f := finalizer.New(finalizer.ForClient(k8s, nil))
	if err := f.Register("example.com/x", finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result { return finalizer.Done() })); err != nil {
		t.Fatal(err)
	}
	var typedNil *corev1.ConfigMap
	for name, obj := range map[string]client.Object{"nil": nil, "typed nil": typedNil} {
		if _, err := f.Reconcile(t.Context(), obj); !errors.Is(err, finalizer.ErrNilObject) {
			t.Errorf("%s: Reconcile = %v, want ErrNilObject", name, err)
		}
	}
	if _, err := finalizer.Add(t.Context(), finalizer.ForClient(k8s, nil), typedNil, "example.com/x"); !errors.Is(err, finalizer.ErrNilObject) {
		t.Errorf("Add(nil) = %v, want ErrNilObject", err)
	}
	if err := finalizer.Remove(t.Context(), finalizer.ForClient(k8s, nil), nil, "example.com/x"); !errors.Is(err, finalizer.ErrNilObject) {
		t.Errorf("Remove(nil) = %v, want ErrNilObject", err)
	}
	empty := finalizer.New(finalizer.ForClient(k8s, nil))
	if _, err := empty.Reconcile(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}); err == nil {
		t.Error("Reconcile with no finalizer registered succeeded")
	}
}

func TestUnknownKindIsAClearError(t *testing.T) {
	testenv.SkipShort(t)
	f := finalizer.New(finalizer.ForClient(k8s, nil))
	if err := f.Register("example.com/x", finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result { return finalizer.Done() })); err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "nope.example.com", Version: "v1", Kind: "Widget"}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetName("w")
	obj.SetNamespace("default")
	_, err := f.Reconcile(t.Context(), obj)
	if err == nil || !strings.Contains(err.Error(), "Widget") || !strings.Contains(err.Error(), "no matches for nope.example.com/v1") {
		t.Errorf("Reconcile of an unknown kind = %v, want an error naming the kind", err)
	}
	if _, err := finalizer.Drain(t.Context(), k8s, gvk, "example.com/x"); err == nil || !strings.Contains(err.Error(), "Widget") {
		t.Errorf("Drain of an unknown kind = %v, want an error naming the kind", err)
	}
}

// TestMisbehavingHandlersKeepTheFinalizer: a handler that panics, hangs past
// its timeout or answers nonsense is a Retry with a clear error, never a
// removal.
func TestMisbehavingHandlersKeepTheFinalizer(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	cases := map[string]struct {
		handler finalizer.HandlerFunc
		wantErr string
	}{
		"panics": {
			handler: func(context.Context, client.Object) finalizer.Result { panic("boom") },
			wantErr: "handler panicked: boom",
		},
		"hangs ignoring its context": {
			handler: func(context.Context, client.Object) finalizer.Result { select {} },
			wantErr: "handler did not answer within 200ms",
		},
		"answers no state": {
			handler: func(context.Context, client.Object) finalizer.Result { return finalizer.Result{} },
			wantErr: `unknown state ""`,
		},
		"retries with a nil error": {
			handler: func(context.Context, client.Object) finalizer.Result { return finalizer.Retry(nil) },
			wantErr: "asked for a retry without an error",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			const key = "misbehave.example.com/cleanup"
			cm := configMap(t, ns, "cm-"+strings.ReplaceAll(strings.ToLower(name), " ", "-"), key)
			deleteObject(t, cm)
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
				t.Fatal(err)
			}
			f := finalizer.New(finalizer.ForClient(k8s, nil))
			if err := f.Register(key, tc.handler, finalizer.WithAttemptTimeout(200*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := f.Reconcile(t.Context(), cm)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Reconcile = %v, want an error containing %q", err, tc.wantErr)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Reconcile took %s", took)
			}
			if len(out.Removed) != 0 {
				t.Errorf("Removed = %v after a misbehaving handler", out.Removed)
			}
			got := &corev1.ConfigMap{}
			if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), got); err != nil {
				t.Fatalf("object gone after a misbehaving handler: %v", err)
			}
			if !slices.Contains(got.Finalizers, key) {
				t.Errorf("finalizer removed after a misbehaving handler: %v", got.Finalizers)
			}
			// Leave nothing stuck behind.
			if err := finalizer.Remove(t.Context(), finalizer.ForClient(k8s, nil), got, key); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRetryAfterKeepsItsTime: a handler's RetryAfter is recorded as a
// failed attempt with its next attempt's time, Reconcile asks to be called
// again then (no error, so the work queue adds no backoff of its own), and
// a Reconcile before that time (our own progress write wakes one) does not
// call the handler.
func TestRetryAfterKeepsItsTime(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	const key = "retryafter.example.com/cleanup"
	cm := configMap(t, ns, "retry-after", key)
	deleteObject(t, cm)
	calls := 0
	f := finalizer.New(finalizer.ForClient(k8s, nil))
	err := f.Register(key, finalizer.HandlerFunc(func(context.Context, client.Object) finalizer.Result {
		calls++
		return finalizer.RetryAfter(errors.New("the receiver refused the call"), time.Minute)
	}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
			t.Fatal(err)
		}
		out, err := f.Reconcile(t.Context(), cm)
		if err != nil || out.RequeueAfter <= 0 || out.RequeueAfter > time.Minute {
			t.Fatalf("Reconcile %d = %+v, %v; want no error, again within a minute", i+1, out, err)
		}
	}
	if calls != 1 {
		t.Errorf("the handler was called %d times before its retry time, want 1", calls)
	}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(cm), cm); err != nil {
		t.Fatal(err)
	}
	var p finalizer.Progress
	for _, rec := range finalizer.ReadProgress(cm) {
		if rec.Finalizer == key {
			p = rec
		}
	}
	if ok := p.Finalizer == key; !ok || p.State != finalizer.StateRetry || p.NextAttempt == nil || !strings.Contains(p.Message, "refused") {
		t.Errorf("progress = %+v; want Retry with its next attempt and the failure", p)
	}
	if err := finalizer.Remove(t.Context(), finalizer.ForClient(k8s, nil), cm, key); err != nil {
		t.Fatal(err)
	}
}
