/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

func TestWebhookOutcome(t *testing.T) {
	type want struct {
		Done      bool
		After     time.Duration
		Failed    bool // definitive: onFailure applies
		Transient bool // retried whatever onFailure says
		Message   string
	}
	long := strings.Repeat("x", 1000)
	cases := map[string]struct {
		code       int
		retryAfter string
		body       string
		want       want
	}{
		"empty 200 is success":                 {code: 200, want: want{Done: true}},
		"explicit success":                     {code: 200, body: `{"status":"Success"}`, want: want{Done: true}},
		"in progress with retry":               {code: 200, body: `{"status":"InProgress","message":"3 records left","retryAfterSeconds":7}`, want: want{After: 7 * time.Second, Message: "webhook: 3 records left"}},
		"in progress without retry":            {code: 200, body: `{"status":"InProgress"}`, want: want{After: pollInterval, Message: "webhook: in progress"}},
		"retryAfterSeconds is capped":          {code: 200, body: `{"status":"InProgress","retryAfterSeconds":1e300}`, want: want{After: maxRetryAfter, Message: "webhook: in progress"}},
		"negative retryAfterSeconds":           {code: 200, body: `{"status":"InProgress","retryAfterSeconds":-5}`, want: want{After: pollInterval, Message: "webhook: in progress"}},
		"retryAfterSeconds of the wrong type":  {code: 200, body: `{"status":"InProgress","retryAfterSeconds":"soon"}`, want: want{After: pollInterval, Message: "webhook: in progress"}},
		"202 accepted":                         {code: 202, retryAfter: "4", want: want{After: 4 * time.Second, Message: "webhook accepted the request: in progress"}},
		"failure with message":                 {code: 200, body: `{"status":"Failure","message":"record locked"}`, want: want{Failed: true, Message: "webhook answered Failure: record locked"}},
		"failure message is cleaned":           {code: 200, body: `{"status":"Failure","message":"line1\nline2\u0007\u202e!"}`, want: want{Failed: true, Message: "webhook answered Failure: line1 line2!"}},
		"failure message is bounded":           {code: 200, body: `{"status":"Failure","message":"` + long + `"}`, want: want{Failed: true, Message: "webhook answered Failure: " + long[:maxWebhookMessage-3] + "..."}},
		"429 honours Retry-After":              {code: 429, retryAfter: "30", want: want{After: 30 * time.Second, Message: "webhook asked to retry later (HTTP 429)"}},
		"429 Retry-After is capped":            {code: 429, retryAfter: "99999999999999999999999", want: want{After: maxRetryAfter, Message: "webhook asked to retry later (HTTP 429)"}},
		"429 without Retry-After":              {code: 429, want: want{After: pollInterval, Message: "webhook asked to retry later (HTTP 429)"}},
		"503 with Retry-After is not now":      {code: 503, retryAfter: "2", want: want{After: 2 * time.Second, Message: "webhook asked to retry later (HTTP 503)"}},
		"503 without Retry-After is transient": {code: 503, body: "upstream down", want: want{Transient: true, Message: "webhook answered HTTP 503"}},
		"500 with a JSON message is transient": {code: 500, body: `{"status":"Failure","message":"db down"}`, want: want{Transient: true, Message: "webhook answered HTTP 500: db down"}},
		"502 body is never echoed":             {code: 502, body: "<html>AccessKeyId=AKIA...</html>", want: want{Transient: true, Message: "webhook answered HTTP 502"}},
		"404 is definitive":                    {code: 404, body: "no such route", want: want{Failed: true, Message: "webhook answered HTTP 404"}},
		"403 with a message is definitive":     {code: 403, body: `{"message":"not allowed"}`, want: want{Failed: true, Message: "webhook answered HTTP 403: not allowed"}},
		"409 is transient":                     {code: 409, want: want{Transient: true, Message: "webhook answered HTTP 409"}},
		"302 is a definitive failure":          {code: 302, body: "AccessKeyId=secret", want: want{Failed: true, Message: "webhook answered HTTP 302: redirects are not followed"}},
		"unknown status":                       {code: 200, body: `{"status":"Maybe"}`, want: want{Transient: true, Message: `webhook answered an unknown status "Maybe"`}},
		"JSON without a status":                {code: 200, body: `{"message":"hi"}`, want: want{Transient: true, Message: "webhook answered HTTP 200 without a status"}},
		"2xx body that is not an answer":       {code: 200, body: `<html>ok</html>`, want: want{Transient: true, Message: "webhook answered HTTP 200 with a body that is not a well-formed answer"}},
		"truncated JSON is not an answer":      {code: 200, body: `{"status":"Success"`, want: want{Transient: true, Message: "webhook answered HTTP 200 with a body that is not a well-formed answer"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := webhookOutcome(tc.code, tc.retryAfter, []byte(tc.body))
			got := want{Done: out.done, After: out.after, Failed: out.err != nil && out.definitive, Transient: out.err != nil && !out.definitive, Message: out.message}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                     0,
		"  12 ":                12 * time.Second,
		"0":                    0,
		"-5":                   0,
		"600":                  maxRetryAfter,
		"86400":                maxRetryAfter,
		"18446744073709551616": maxRetryAfter, // past uint64
		"1.5":                  0,
		"soon":                 0,
		now.Add(time.Minute).Format(http.TimeFormat):      time.Minute,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		now.Add(1000 * time.Hour).Format(http.TimeFormat): maxRetryAfter,
	}
	for in, want := range cases {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWebhookPayloadLeavesOutAnnotations(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation:       `{"data":{"password":"hunter2"}}`,
		"progress.finalizer.teardown.dev/x.io_y": `{"state":"Pending"}`,
		"steps.teardown.dev/x.io_y":              `{"step":1}`,
		"teardown.dev/released-finalizer":        "x",
		"shop.teardown.dev/anything":             "x",
		"example.com/owner":                      "team-a",
		"deployment.kubernetes.io/revision":      "3",
		"noteardown.dev/kept":                    "kept: not our domain",
		"kubectl.kubernetes.io/restartedAt":      "kept",
	}}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	req := webhookRequest(pol, "x.io/old", "notify", Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: obj})
	want := map[string]string{
		"example.com/owner":                 "team-a",
		"deployment.kubernetes.io/revision": "3",
		"noteardown.dev/kept":               "kept: not our domain",
		"kubectl.kubernetes.io/restartedAt": "kept",
	}
	if diff := cmp.Diff(want, req.Object.Annotations); diff != "" {
		t.Errorf("annotations sent, -want +got:\n%s", diff)
	}
	if req.Finalizer != "x.io/old" {
		t.Errorf("Finalizer = %q, want the key the cleanup runs under", req.Finalizer)
	}
	if len(obj.Annotations) != 9 {
		t.Error("webhookRequest changed the target's annotations")
	}
}

// TestWebhookNeverFollowsRedirects: a receiver that redirects elsewhere is a
// definitive failure, the other place is never called, and nothing of either
// body appears in the message.
func TestWebhookNeverFollowsRedirects(t *testing.T) {
	var reached atomic.Bool
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Store(true)
		_, _ = io.WriteString(w, "AccessKeyId=AKIASECRET")
	}))
	defer internal.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/latest/meta-data/iam/credentials", http.StatusFound)
	}))
	defer redirector.Close()
	r := &Runner{HTTP: testClients()}
	url := redirector.URL + "/cleanup?token=abc"
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1"}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	out := r.webhook(t.Context(), pol, pol.Key, step, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: obj})
	if reached.Load() {
		t.Error("the redirect was followed")
	}
	if out.err == nil || !out.definitive {
		t.Fatalf("outcome = %+v, want a definitive failure", out)
	}
	if strings.Contains(out.message, "AccessKey") || strings.Contains(out.message, "meta-data") {
		t.Errorf("message %q repeats what the other end sent", out.message)
	}
}

// TestWebhookCallErrorsAreTransientAndWrapped: a refused connection is
// transient, says so without echoing anything, and keeps the net error in
// its chain; the URL's query (which may carry a token) is not shown.
func TestWebhookCallErrorsAreTransientAndWrapped(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/cleanup?token=abc"
	srv.Close() // nothing listens any more
	r := &Runner{HTTP: testClients()}
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1"}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	out := r.webhook(t.Context(), pol, pol.Key, step, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: obj})
	if out.err == nil || out.definitive {
		t.Fatalf("outcome = %+v, want a transient error", out)
	}
	var opErr *net.OpError
	if !errors.As(out.err, &opErr) || !errors.Is(out.err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not wrap the net error", out.err)
	}
	if want := "calling " + srv.URL + "/cleanup: connection refused"; out.message != want {
		t.Errorf("message = %q, want %q", out.message, want)
	}
}

// TestMalformedAnswerIsNotEchoed: Go's transport quotes a malformed answer's
// first line in its error; that line must not reach the message.
func TestMalformedAnswerIsNotEchoed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "+OK redis AccessKeyId=AKIASECRET\r\n\r\n")
			_ = conn.Close()
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	r := &Runner{HTTP: testClients()}
	step := teardownv1alpha1.Step{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &url}}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", UID: "u1"}}
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}, Key: "x.io/y"}
	out := r.webhook(t.Context(), pol, pol.Key, step, Object{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Obj: obj})
	if out.err == nil || out.definitive {
		t.Fatalf("outcome = %+v, want a transient error", out)
	}
	if strings.Contains(out.message, "AKIA") || strings.Contains(out.message, "redis") {
		t.Errorf("message %q echoes the answer", out.message)
	}
}

func TestJobNameIsStableAndValid(t *testing.T) {
	a := JobName("policy-uid", "target-uid", "drain")
	if a != JobName("policy-uid", "target-uid", "drain") {
		t.Error("JobName is not stable")
	}
	if a == JobName("policy-uid", "target-uid", "other-step") || a == JobName("policy-uid", "other-target", "drain") {
		t.Error("JobName does not tell steps or targets apart")
	}
	if len(a) > 63 {
		t.Errorf("JobName %q is longer than a label value may be", a)
	}
}

func TestStateAnnotationFollowsProgressNaming(t *testing.T) {
	if got, want := StateAnnotation("my.custom/finalizer"), "steps.teardown.dev/my.custom_finalizer"; got != want {
		t.Errorf("StateAnnotation = %q, want %q", got, want)
	}
}
