/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/steps"
)

// signedRequest is a request as the teardown-controller makes it: the body
// is steps.WebhookRequest, and the headers come from steps.StandardKey and
// steps.StandardSignature, the code the controller signs with (the test on
// the real control plane, internal/controller's
// TestExampleReceiverAcceptsTheController, takes the controller's own call).
func signedRequest(t *testing.T, secret []byte, at time.Time) (*http.Request, []byte) {
	t.Helper()
	deleted := metav1.NewTime(at.Add(-time.Second).UTC().Truncate(time.Second))
	body, err := json.Marshal(steps.WebhookRequest{
		APIVersion: "teardown.dev/v1alpha1", Kind: "CleanupRequest",
		Policy: steps.PolicyRef{Kind: "TeardownPolicy", Namespace: "shop", Name: "dns-records"},
		Step:   "remove-dns", Finalizer: "shop.teardown.dev/dns-records",
		Object: steps.WebhookObject{APIVersion: "v1", Kind: "Service", Namespace: "shop", Name: "web", UID: "uid-1",
			Labels: map[string]string{"app": "shop"}, DeletionTimestamp: &deleted},
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := steps.StandardKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	id := "td_0123456789abcdef0123456789abcdef"
	req := httptest.NewRequest(http.MethodPost, "/cleanup", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(steps.WebhookIDHeader, id)
	req.Header.Set(steps.WebhookTimestampHeader, strconv.FormatInt(at.Unix(), 10))
	req.Header.Set(steps.WebhookSignatureHeader, steps.StandardSignature(key, id, at, body))
	req.Header.Set(steps.SignatureHeader, steps.Signature(secret, at, body)) //nolint:staticcheck // the legacy header is still sent and must still verify
	return req, body
}

func newReceiver(t *testing.T, cleanup func(context.Context, *CleanupRequest) Response, secrets ...[]byte) *Receiver {
	t.Helper()
	rc := &Receiver{Cleanup: cleanup, Log: slog.New(slog.DiscardHandler)}
	for _, s := range secrets {
		v, err := NewVerifier(s)
		if err != nil {
			t.Fatal(err)
		}
		rc.Verifiers = append(rc.Verifiers, v)
	}
	return rc
}

func TestReceiver(t *testing.T) {
	// The library checks the timestamp against the real clock.
	now := time.Now()
	secret, previous := []byte("whsec_"+base64.StdEncoding.EncodeToString([]byte("current-secret-0123456789"))+"\n"), []byte("previous-raw-secret")
	notSigned := Response{Status: Failure, Message: "request not signed by Teardown"}
	for _, tc := range []struct {
		name     string
		request  func(t *testing.T) *http.Request
		answer   Response
		wantCode int
		want     Response
		wantCall bool
	}{
		{name: "signed", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now); return r },
			answer: Response{Status: Success}, wantCode: 200, want: Response{Status: steps.WebhookSuccess}, wantCall: true},
		{name: "signed with the previous (raw) secret during a rotation", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, previous, now); return r },
			answer: Response{Status: Success}, wantCode: 200, want: Response{Status: steps.WebhookSuccess}, wantCall: true},
		{name: "in progress", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now); return r },
			answer: Response{Status: InProgress, Message: "removing records", RetryAfterSeconds: 30}, wantCode: 200,
			want: Response{Status: steps.WebhookInProgress, Message: "removing records", RetryAfterSeconds: 30}, wantCall: true},
		{name: "failure", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now); return r },
			answer: Response{Status: Failure, Message: "zone is locked"}, wantCode: 200,
			want: Response{Status: steps.WebhookFailure, Message: "zone is locked"}, wantCall: true},
		{name: "signed 4 minutes ago", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now.Add(-4*time.Minute)); return r },
			answer: Response{Status: Success}, wantCode: 200, want: Response{Status: steps.WebhookSuccess}, wantCall: true},
		{name: "signed 6 minutes ago: a replay", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now.Add(-6*time.Minute)); return r },
			wantCode: 401, want: notSigned},
		{name: "signed 6 minutes ahead", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now.Add(6*time.Minute)); return r },
			wantCode: 401, want: notSigned},
		{name: "other secret", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, []byte("guess"), now); return r },
			wantCode: 401, want: notSigned},
		{name: "body changed", request: func(t *testing.T) *http.Request {
			r, body := signedRequest(t, secret, now)
			changed := bytes.Replace(body, []byte(`"name":"web"`), []byte(`"name":"db"`), 1)
			r.Body = io.NopCloser(bytes.NewReader(changed))
			return r
		}, wantCode: 401, want: notSigned},
		{name: "timestamp changed", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now.Add(-10*time.Minute))
			r.Header.Set(steps.WebhookTimestampHeader, strconv.FormatInt(now.Unix(), 10))
			return r
		}, wantCode: 401, want: notSigned},
		{name: "webhook-id changed", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now)
			r.Header.Set(steps.WebhookIDHeader, "td_another")
			return r
		}, wantCode: 401, want: notSigned},
		{name: "only the deprecated Teardown-Signature", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now)
			r.Header.Del(steps.WebhookSignatureHeader)
			return r
		}, wantCode: 401, want: notSigned},
		{name: "unsigned", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now)
			for _, h := range []string{steps.WebhookIDHeader, steps.WebhookTimestampHeader, steps.WebhookSignatureHeader, steps.SignatureHeader} { //nolint:staticcheck // the legacy header is still sent
				r.Header.Del(h)
			}
			return r
		}, wantCode: 401, want: notSigned},
		{name: "GET", request: func(*testing.T) *http.Request { return httptest.NewRequest(http.MethodGet, "/cleanup", nil) },
			wantCode: 405, want: Response{Status: Failure, Message: "POST only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			rc := newReceiver(t, func(_ context.Context, req *CleanupRequest) Response {
				called = true
				if req.Object.UID != "uid-1" || req.Step != "remove-dns" || req.Policy.Name != "dns-records" {
					t.Errorf("request decoded as %+v", req)
				}
				return tc.answer
			}, secret, previous)
			w := httptest.NewRecorder()
			rc.ServeHTTP(w, tc.request(t))
			if w.Code != tc.wantCode {
				t.Errorf("HTTP %d, want %d", w.Code, tc.wantCode)
			}
			// The answer is what the controller's contract reads.
			var got steps.WebhookResponse
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer %q: %v", w.Body.String(), err)
			}
			if got != (steps.WebhookResponse{Status: tc.want.Status, Message: tc.want.Message, RetryAfterSeconds: tc.want.RetryAfterSeconds}) {
				t.Errorf("answer = %+v, want %+v", got, tc.want)
			}
			if called != tc.wantCall {
				t.Errorf("cleanup called: %v, want %v", called, tc.wantCall)
			}
		})
	}
}

// TestReceiverDeduplicates: a delivery done (Success) is not done again
// when the same webhook-id comes back; one still in progress is.
func TestReceiverDeduplicates(t *testing.T) {
	secret := []byte("raw-secret")
	answers := []Response{{Status: InProgress}, {Status: Success}, {Status: Failure, Message: "must not run"}}
	calls := 0
	rc := newReceiver(t, func(context.Context, *CleanupRequest) Response { calls++; return answers[calls-1] }, secret)
	var got []string
	for range 3 {
		r, _ := signedRequest(t, secret, time.Now())
		w := httptest.NewRecorder()
		rc.ServeHTTP(w, r)
		var resp Response
		_ = json.Unmarshal(w.Body.Bytes(), &resp)
		got = append(got, resp.Status)
	}
	if want := []string{InProgress, Success, Success}; !slices.Equal(got, want) || calls != 2 {
		t.Errorf("answers %v after %d cleanups, want %v after 2", got, calls, want)
	}
}
