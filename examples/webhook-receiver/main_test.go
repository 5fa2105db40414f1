/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/steps"
)

// signedRequest is a request as the teardown-controller makes it: the body
// is steps.WebhookRequest and the signature comes from steps.Signature, the
// code the controller signs with.
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
	req := httptest.NewRequest(http.MethodPost, "/cleanup", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(steps.SignatureHeader, steps.Signature(secret, at, body))
	req.Header.Set(steps.DeliveryHeader, "d-1")
	return req, body
}

func TestReceiver(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	secret, previous := []byte("current-secret"), []byte("previous-secret")
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
		{name: "signed with the previous secret during a rotation", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, previous, now); return r },
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
			wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "signed 6 minutes ahead", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, secret, now.Add(6*time.Minute)); return r },
			wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "other secret", request: func(t *testing.T) *http.Request { r, _ := signedRequest(t, []byte("guess"), now); return r },
			wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "body changed", request: func(t *testing.T) *http.Request {
			r, body := signedRequest(t, secret, now)
			changed := bytes.Replace(body, []byte(`"name":"web"`), []byte(`"name":"db"`), 1)
			r.Body = io.NopCloser(bytes.NewReader(changed))
			return r
		}, wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "timestamp changed", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now.Add(-10*time.Minute))
			sig := r.Header.Get(steps.SignatureHeader)
			_, v1, _ := strings.Cut(sig, ",")
			r.Header.Set(steps.SignatureHeader, "t="+strconv.FormatInt(now.Unix(), 10)+","+v1)
			return r
		}, wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "unsigned", request: func(t *testing.T) *http.Request {
			r, _ := signedRequest(t, secret, now)
			r.Header.Del(steps.SignatureHeader)
			return r
		}, wantCode: 401, want: Response{Status: Failure, Message: "request not signed by Teardown"}},
		{name: "GET", request: func(*testing.T) *http.Request { return httptest.NewRequest(http.MethodGet, "/cleanup", nil) },
			wantCode: 405, want: Response{Status: Failure, Message: "POST only"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			rc := &Receiver{
				Secrets: [][]byte{secret, previous},
				Cleanup: func(_ context.Context, req *CleanupRequest) Response {
					called = true
					if req.Object.UID != "uid-1" || req.Step != "remove-dns" || req.Policy.Name != "dns-records" {
						t.Errorf("request decoded as %+v", req)
					}
					return tc.answer
				},
				Now: func() time.Time { return now },
				Log: slog.New(slog.DiscardHandler),
			}
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
