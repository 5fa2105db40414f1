/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

const testKey = "ns.teardown.dev/p"

// Webhook answers a test receiver gives, per step.
const (
	answerSuccess    = "success"
	answerInProgress = "in-progress"
	answerFailure    = "failure"
	answer503        = "503"
	answer404        = "404"
)

// receiver is a webhook server that answers each step as told and records
// which steps it was called for.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []string
	answers map[string]string
}

func newReceiver(t *testing.T, answers map[string]string) *receiver {
	rc := &receiver{answers: answers}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req WebhookRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.calls = append(rc.calls, req.Step)
		answer := rc.answers[req.Step]
		rc.mu.Unlock()
		switch answer {
		case answerSuccess:
			_ = json.NewEncoder(w).Encode(WebhookResponse{Status: WebhookSuccess})
		case answerInProgress:
			_ = json.NewEncoder(w).Encode(WebhookResponse{Status: WebhookInProgress, Message: "working"})
		case answerFailure:
			_ = json.NewEncoder(w).Encode(WebhookResponse{Status: WebhookFailure, Message: "record locked"})
		case answer503:
			w.WriteHeader(http.StatusServiceUnavailable)
		case answer404:
			w.WriteHeader(http.StatusNotFound)
		default:
			t.Errorf("receiver called for step %q, which has no answer", req.Step)
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) set(step, answer string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answers[step] = answer
}

// takeCalls returns the steps called since the last take.
func (rc *receiver) takeCalls() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	calls := rc.calls
	rc.calls = nil
	return calls
}

func (rc *receiver) step(name string, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
	url := rc.URL + "/" + name
	return teardownv1alpha1.Step{Name: name, OnFailure: onFailure, Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}
}

func newPolicy(t *testing.T, uid string, steps ...teardownv1alpha1.Step) *policy.Policy {
	t.Helper()
	pol, err := policy.FromObject(&teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID(uid)},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Steps: steps},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a runner over a fake API holding one target ConfigMap.
type fixture struct {
	runner  *Runner
	client  client.Client
	target  Object
	clock   *clock
	mu      sync.Mutex
	patches int
}

func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "target-uid", Finalizers: []string{testKey}}}
	countPatches := funcs.Patch
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		f.mu.Lock()
		f.patches++
		f.mu.Unlock()
		if countPatches != nil {
			return countPatches(ctx, c, obj, patch, opts...)
		}
		return c.Patch(ctx, obj, patch, opts...)
	}
	f.client = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(append(objs, cm)...).WithInterceptorFuncs(funcs).Build()
	f.target = Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: cm}
	f.runner = &Runner{Client: f.client, Reader: f.client, HTTP: testClients(), Now: f.clock.Now}
	return f
}

func (f *fixture) run(t *testing.T, pol *policy.Policy) finalizer.Result {
	t.Helper()
	return f.runner.Run(t.Context(), pol, testKey, f.target)
}

func (f *fixture) writes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.patches
	f.patches = 0
	return n
}

// setState writes a state annotation by hand.
func (f *fixture) setState(t *testing.T, value string) {
	t.Helper()
	annotations := f.target.Obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[StateAnnotation(testKey)] = value
	f.target.Obj.SetAnnotations(annotations)
}

func stepErr(t *testing.T, res finalizer.Result) *StepError {
	t.Helper()
	var se *StepError
	if !errors.As(res.Err, &se) {
		t.Fatalf("result %+v does not carry a *StepError", res)
	}
	return se
}

// TestTransientErrorsNeverTriggerOnFailure: whatever onFailure says, an
// error that is not a definitive failure of the step is a Retry that says
// "transient" and keeps the underlying error in its chain; no later step
// runs and the finalizer is never released.
func TestTransientErrorsNeverTriggerOnFailure(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("apiserver is shutting down")
	cases := map[string]struct {
		// step builds the failing first step.
		step  func(rc *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step
		funcs interceptor.Funcs
		// chain checks the error chain.
		chain func(err error) bool
	}{
		"connection refused": {
			step: func(_ *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
				srv := httptest.NewServer(http.NotFoundHandler())
				url := srv.URL
				srv.Close()
				return teardownv1alpha1.Step{Name: "first", OnFailure: onFailure, Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}
			},
			chain: func(err error) bool {
				var opErr *net.OpError
				return errors.As(err, &opErr) && errors.Is(err, syscall.ECONNREFUSED)
			},
		},
		"503 without Retry-After": {
			step: func(rc *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
				rc.set("first", answer503)
				return rc.step("first", onFailure)
			},
			chain: func(err error) bool {
				var he *HTTPStatusError
				return errors.As(err, &he) && he.Code == http.StatusServiceUnavailable
			},
		},
		"Job that cannot be read": {
			step: func(_ *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
				return teardownv1alpha1.Step{Name: "first", OnFailure: onFailure, Job: &teardownv1alpha1.JobAction{}}
			},
			funcs: interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*batchv1.Job); ok {
					return unavailable
				}
				return c.Get(ctx, key, obj, opts...)
			}},
			chain: apierrors.IsServiceUnavailable,
		},
		"stale REST mapping": {
			step: func(_ *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
				return teardownv1alpha1.Step{Name: "first", OnFailure: onFailure, Delete: &teardownv1alpha1.DeleteAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "example.com/v1", Kind: "Gone"}}}}
			},
			chain: func(err error) bool {
				var noMatch *meta.NoKindMatchError
				return errors.As(err, &noMatch)
			},
		},
		"API list error": {
			step: func(_ *receiver, onFailure teardownv1alpha1.FailureAction) teardownv1alpha1.Step {
				return teardownv1alpha1.Step{Name: "first", OnFailure: onFailure, Delete: &teardownv1alpha1.DeleteAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Secret"}}}}
			},
			funcs: interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
				return unavailable
			}},
			chain: apierrors.IsServiceUnavailable,
		},
	}
	for name, tc := range cases {
		for _, onFailure := range []teardownv1alpha1.FailureAction{teardownv1alpha1.FailureRelease, teardownv1alpha1.FailureContinue, teardownv1alpha1.FailureRetry} {
			t.Run(name+"/"+string(onFailure), func(t *testing.T) {
				rc := newReceiver(t, map[string]string{"second": answerSuccess})
				f := newFixture(t, tc.funcs)
				f.runner.Mapper = testMapper()
				pol := newPolicy(t, "policy-uid", tc.step(rc, onFailure), rc.step("second", teardownv1alpha1.FailureRetry))
				res := f.run(t, pol)
				if res.State != finalizer.StateRetry {
					t.Fatalf("state = %s (%s), want Retry", res.State, res.Reason)
				}
				se := stepErr(t, res)
				if se.Kind != Transient || se.Definitive() || se.Step != "first" || se.Index != 0 || se.Action == "" {
					t.Errorf("step error = %+v, want a transient error of step first", se)
				}
				if !strings.HasPrefix(res.Err.Error(), "step first: transient: ") {
					t.Errorf("message %q does not say transient", res.Err.Error())
				}
				if !tc.chain(res.Err) {
					t.Errorf("error %v lost its cause", res.Err)
				}
				if calls := rc.takeCalls(); slices.Contains(calls, "second") {
					t.Errorf("the next step ran after a transient error: %v", calls)
				}
			})
		}
	}
}

// testMapper knows core/v1 Secrets and ConfigMaps, nothing else.
func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	return m
}

// TestDefinitiveFailuresFollowOnFailure: a webhook Failure, a permanent 4xx
// and a failed Job are what onFailure acts on.
func TestDefinitiveFailuresFollowOnFailure(t *testing.T) {
	t.Run("webhook Failure under Release releases", func(t *testing.T) {
		rc := newReceiver(t, map[string]string{"first": answerFailure, "second": answerSuccess})
		f := newFixture(t, interceptor.Funcs{})
		pol := newPolicy(t, "policy-uid", rc.step("first", teardownv1alpha1.FailureRelease), rc.step("second", teardownv1alpha1.FailureRetry))
		res := f.run(t, pol)
		if res.State != finalizer.StateRelease {
			t.Fatalf("state = %s, want Release", res.State)
		}
		if want := "step first: failed: webhook answered Failure: record locked; its policy says Release"; res.Reason != want {
			t.Errorf("reason = %q, want %q", res.Reason, want)
		}
		if diff := cmp.Diff([]string{"first"}, rc.takeCalls()); diff != "" {
			t.Errorf("calls, -want +got:\n%s", diff)
		}
	})
	t.Run("404 under Continue goes on", func(t *testing.T) {
		rc := newReceiver(t, map[string]string{"first": answer404, "second": answerSuccess})
		f := newFixture(t, interceptor.Funcs{})
		pol := newPolicy(t, "policy-uid", rc.step("first", teardownv1alpha1.FailureContinue), rc.step("second", teardownv1alpha1.FailureRetry))
		if res := f.run(t, pol); res.State != finalizer.StateDone {
			t.Fatalf("state = %s (%v), want Done", res.State, res.Err)
		}
		if diff := cmp.Diff([]string{"first", "second"}, rc.takeCalls()); diff != "" {
			t.Errorf("calls, -want +got:\n%s", diff)
		}
	})
	t.Run("webhook Failure under Retry retries and says failed", func(t *testing.T) {
		rc := newReceiver(t, map[string]string{"first": answerFailure})
		f := newFixture(t, interceptor.Funcs{})
		pol := newPolicy(t, "policy-uid", rc.step("first", teardownv1alpha1.FailureRetry))
		res := f.run(t, pol)
		if res.State != finalizer.StateRetry {
			t.Fatalf("state = %s, want Retry", res.State)
		}
		if se := stepErr(t, res); se.Kind != Failed || !strings.HasPrefix(se.Error(), "step first: failed: ") {
			t.Errorf("step error = %v (%s), want Failed", se, se.Kind)
		}
	})
	t.Run("failed Job under Release releases and removes the Job", func(t *testing.T) {
		step := teardownv1alpha1.Step{Name: "drain", OnFailure: teardownv1alpha1.FailureRelease, Job: &teardownv1alpha1.JobAction{}}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: JobName("policy-uid", "target-uid", "drain")},
			Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
				Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}},
		}
		f := newFixture(t, interceptor.Funcs{}, job)
		res := f.run(t, newPolicy(t, "policy-uid", step))
		if res.State != finalizer.StateRelease || !strings.Contains(res.Reason, "failed: Job ns/"+job.Name+" failed: BackoffLimitExceeded") {
			t.Fatalf("result = %s %q, want a Release naming the failed Job", res.State, res.Reason)
		}
		if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(job), &batchv1.Job{}); !apierrors.IsNotFound(err) {
			t.Errorf("failed Job still there: %v", err)
		}
	})
}

// TestStepTimeout: the timeout counts from the step's start, including time
// spent on transient errors; once it passed the step failed definitively,
// marked TimedOut, and onFailure applies.
func TestStepTimeout(t *testing.T) {
	for _, onFailure := range []teardownv1alpha1.FailureAction{teardownv1alpha1.FailureRelease, teardownv1alpha1.FailureRetry} {
		t.Run(string(onFailure), func(t *testing.T) {
			rc := newReceiver(t, map[string]string{"first": answerSuccess, "slow": answerInProgress})
			f := newFixture(t, interceptor.Funcs{})
			slow := rc.step("slow", onFailure)
			slow.Timeout = &metav1.Duration{Duration: time.Minute}
			pol := newPolicy(t, "policy-uid", rc.step("first", teardownv1alpha1.FailureRetry), slow)

			if res := f.run(t, pol); res.State != finalizer.StatePending {
				t.Fatalf("first run: %s, want Pending", res.State)
			}
			f.clock.advance(40 * time.Second)
			rc.set("slow", answer503)
			if res := f.run(t, pol); res.State != finalizer.StateRetry || stepErr(t, res).Kind != Transient {
				t.Fatalf("second run: %s %v, want a transient Retry", res.State, res.Err)
			}
			if pos := (Records{}).Resume(f.target.Obj, pol, testKey, f.clock.Now()); pos.TimedOut || pos.Index != 1 {
				t.Errorf("Resume = %+v before the timeout", pos)
			}
			f.clock.advance(30 * time.Second) // 70s since the step started
			res := f.run(t, pol)
			if pos := (Records{}).Resume(f.target.Obj, pol, testKey, f.clock.Now()); !pos.TimedOut || pos.Step != "slow" {
				t.Errorf("Resume = %+v after the timeout, want TimedOut at slow", pos)
			}
			switch onFailure {
			case teardownv1alpha1.FailureRelease:
				if res.State != finalizer.StateRelease || !strings.HasPrefix(res.Reason, "step slow: timed out after 1m0s: ") {
					t.Errorf("result = %s %q, want a Release saying timed out", res.State, res.Reason)
				}
			default:
				se := stepErr(t, res)
				if res.State != finalizer.StateRetry || se.Kind != TimedOut || !se.Definitive() {
					t.Errorf("result = %s %v, want a TimedOut Retry", res.State, res.Err)
				}
				var he *HTTPStatusError
				if !errors.As(res.Err, &he) {
					t.Errorf("timed-out error %v lost the last error", res.Err)
				}
			}
			if diff := cmp.Diff([]string{"first", "slow", "slow", "slow"}, rc.takeCalls()); diff != "" {
				t.Errorf("calls, -want +got:\n%s", diff)
			}
		})
	}
}

// TestProgressIsBoundToTheVersion: progress recorded under one version of
// the steps is trusted only under exactly that version; any mismatch
// restarts from the first step, and a step in progress is never skipped.
func TestProgressIsBoundToTheVersion(t *testing.T) {
	rc := newReceiver(t, map[string]string{})
	a, b, c := rc.step("a", teardownv1alpha1.FailureRetry), rc.step("b", teardownv1alpha1.FailureRetry), rc.step("c", teardownv1alpha1.FailureRetry)
	// reach runs pol until the receiver holds it at step at.
	reach := func(t *testing.T, f *fixture, pol *policy.Policy, at string) {
		t.Helper()
		for _, s := range pol.Steps {
			rc.set(s.Name, answerSuccess)
		}
		rc.set(at, answerInProgress)
		if res := f.run(t, pol); res.State != finalizer.StatePending {
			t.Fatalf("reaching %s: %s", at, res.State)
		}
		if pos := (Records{}).Resume(f.target.Obj, pol, testKey, f.clock.Now()); pos.Step != at {
			t.Fatalf("reaching %s: at %+v", at, pos)
		}
		rc.takeCalls()
	}
	cases := map[string]struct {
		before  []teardownv1alpha1.Step
		at      string
		after   []teardownv1alpha1.Step
		afterID string
		forge   string // a hand-written record instead of reaching a step
		want    []string
	}{
		"same version resumes":           {before: []teardownv1alpha1.Step{a, b, c}, at: "c", after: []teardownv1alpha1.Step{a, b, c}, want: []string{"c"}},
		"step removed while at c":        {before: []teardownv1alpha1.Step{a, b, c}, at: "c", after: []teardownv1alpha1.Step{a, c}, want: []string{"a", "c"}},
		"reordered while at b":           {before: []teardownv1alpha1.Step{a, b, c}, at: "b", after: []teardownv1alpha1.Step{b, a, c}, want: []string{"b", "a", "c"}},
		"policy recreated (another UID)": {before: []teardownv1alpha1.Step{a, b, c}, at: "c", after: []teardownv1alpha1.Step{a, b, c}, afterID: "other-uid", want: []string{"a", "b", "c"}},
		"forged step 99":                 {after: []teardownv1alpha1.Step{a, b, c}, forge: `{"step":99}`, want: []string{"a", "b", "c"}},
		"forged step -1":                 {after: []teardownv1alpha1.Step{a, b, c}, forge: `{"step":-1}`, want: []string{"a", "b", "c"}},
		"garbage":                        {after: []teardownv1alpha1.Step{a, b, c}, forge: `{"step":`, want: []string{"a", "b", "c"}},
		"old bare index":                 {after: []teardownv1alpha1.Step{a, b, c}, forge: `{"step":2,"since":"2026-03-01T11:00:00Z"}`, want: []string{"a", "b", "c"}},
		"right version, wrong name": {after: []teardownv1alpha1.Step{a, b, c},
			forge: `{"policy":"policy-uid","fingerprint":"FP","step":2,"name":"b","since":"2026-03-01T11:00:00Z"}`, want: []string{"a", "b", "c"}},
		"right everything but fingerprint": {after: []teardownv1alpha1.Step{a, b, c},
			forge: `{"policy":"policy-uid","fingerprint":"0000000000000000","step":2,"name":"c","since":"2026-03-01T11:00:00Z"}`, want: []string{"a", "b", "c"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{})
			if tc.forge != "" {
				fp := newPolicy(t, "policy-uid", tc.after...).Fingerprint
				f.setState(t, strings.Replace(tc.forge, "FP", fp, 1))
			} else {
				reach(t, f, newPolicy(t, "policy-uid", tc.before...), tc.at)
			}
			uid := "policy-uid"
			if tc.afterID != "" {
				uid = tc.afterID
			}
			pol := newPolicy(t, uid, tc.after...)
			for _, s := range pol.Steps {
				rc.set(s.Name, answerSuccess)
			}
			if res := f.run(t, pol); res.State != finalizer.StateDone {
				t.Fatalf("state = %s (%v), want Done", res.State, res.Err)
			}
			if diff := cmp.Diff(tc.want, rc.takeCalls()); diff != "" {
				t.Errorf("steps run, -want +got:\n%s", diff)
			}
		})
	}
}

// TestProgressWrites: a cleanup that finishes in one go after a single step
// writes nothing; finished steps that more steps follow are recorded, so a
// restart never repeats them; an unchanged record is not written again.
func TestProgressWrites(t *testing.T) {
	rc := newReceiver(t, map[string]string{"a": answerSuccess, "b": answerSuccess, "c": answerInProgress})
	a, b, c := rc.step("a", teardownv1alpha1.FailureRetry), rc.step("b", teardownv1alpha1.FailureRetry), rc.step("c", teardownv1alpha1.FailureRetry)

	f := newFixture(t, interceptor.Funcs{})
	if res := f.run(t, newPolicy(t, "policy-uid", a)); res.State != finalizer.StateDone {
		t.Fatalf("one step: %s", res.State)
	}
	if n := f.writes(); n != 0 {
		t.Errorf("a one-step cleanup done in one go wrote %d times", n)
	}
	rc.takeCalls()

	f = newFixture(t, interceptor.Funcs{})
	pol := newPolicy(t, "policy-uid", a, b, c)
	if res := f.run(t, pol); res.State != finalizer.StatePending {
		t.Fatalf("three steps: %s", res.State)
	}
	if n := f.writes(); n != 2 {
		t.Errorf("reaching c wrote %d times, want 2 (after a, after b)", n)
	}
	f.clock.advance(time.Minute)
	if res := f.run(t, pol); res.State != finalizer.StatePending {
		t.Fatalf("three steps again: %s", res.State)
	}
	if n := f.writes(); n != 0 {
		t.Errorf("an unchanged position was written %d times", n)
	}
	// What the fake API holds is what a restarted controller reads.
	stored := &corev1.ConfigMap{}
	if err := f.client.Get(t.Context(), client.ObjectKeyFromObject(f.target.Obj), stored); err != nil {
		t.Fatal(err)
	}
	want := Position{Index: 2, Step: "c", Since: f.clock.Now().Add(-time.Minute)}
	if diff := cmp.Diff(want, Records{}.Resume(stored, pol, testKey, f.clock.Now())); diff != "" {
		t.Errorf("stored position, -want +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "c"}, rc.takeCalls()); diff != "" {
		t.Errorf("calls, -want +got:\n%s", diff)
	}
	// Under another key (an older key of the policy) nothing is recorded.
	if pos := (Records{}).Resume(stored, pol, "ns.teardown.dev/old", f.clock.Now()); pos.Index != 0 {
		t.Errorf("another key's position = %+v", pos)
	}
}

// TestResume covers what the status code relies on: never out of range,
// even for a policy without steps.
func TestResume(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "obj-uid", Annotations: map[string]string{StateAnnotation(testKey): `{"step":3}`}}}
	empty := newPolicy(t, "policy-uid")
	if diff := cmp.Diff(Position{}, Records{}.Resume(obj, empty, testKey, time.Now())); diff != "" {
		t.Errorf("no steps, -want +got:\n%s", diff)
	}
	one := newPolicy(t, "policy-uid", teardownv1alpha1.Step{Name: "only", Delete: &teardownv1alpha1.DeleteAction{}})
	if diff := cmp.Diff(Position{Step: "only"}, Records{}.Resume(obj, one, testKey, time.Now())); diff != "" {
		t.Errorf("forged, -want +got:\n%s", diff)
	}
	// A record from the future counts from now.
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	obj.Annotations[StateAnnotation(testKey)] = `{"object":"obj-uid","policy":"policy-uid","fingerprint":"` + one.Fingerprint + `","step":0,"name":"only","since":"2030-01-01T00:00:00Z"}`
	if diff := cmp.Diff(Position{Step: "only", Since: now}, Records{}.Resume(obj, one, testKey, now)); diff != "" {
		t.Errorf("future since, -want +got:\n%s", diff)
	}
	// A record from before the deletion counts from the deletion: a step
	// with a 5m timeout cannot be timed out by claiming it started long ago.
	timed := newPolicy(t, "policy-uid", teardownv1alpha1.Step{Name: "only", Timeout: &metav1.Duration{Duration: 5 * time.Minute}, Delete: &teardownv1alpha1.DeleteAction{}})
	deleted := now.Add(-time.Minute)
	obj.DeletionTimestamp = &metav1.Time{Time: deleted}
	obj.Annotations[StateAnnotation(testKey)] = `{"object":"obj-uid","policy":"policy-uid","fingerprint":"` + timed.Fingerprint + `","step":0,"name":"only","since":"2020-01-01T00:00:00Z"}`
	if diff := cmp.Diff(Position{Step: "only", Since: deleted}, Records{}.Resume(obj, timed, testKey, now)); diff != "" {
		t.Errorf("since before the deletion, -want +got:\n%s", diff)
	}
	// A record written for another object (at CREATE, or restored from a
	// backup) reads as none.
	copied := obj.DeepCopy()
	copied.UID = "another-uid"
	if diff := cmp.Diff(Position{Step: "only"}, Records{}.Resume(copied, timed, testKey, now)); diff != "" {
		t.Errorf("a record of another object, -want +got:\n%s", diff)
	}
	if uid, ok := (Records{}).StartedBy(obj, testKey); !ok || uid != "policy-uid" {
		t.Errorf("StartedBy = %q, %v; want policy-uid", uid, ok)
	}
	if uid, ok := (Records{}).StartedBy(copied, testKey); ok {
		t.Errorf("StartedBy believed a record of another object: %q", uid)
	}
}
