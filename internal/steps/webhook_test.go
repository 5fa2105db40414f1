/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWebhookOutcome(t *testing.T) {
	type want struct {
		Done    bool
		After   time.Duration
		Failed  bool
		Message string
	}
	cases := map[string]struct {
		code       int
		retryAfter string
		body       string
		want       want
	}{
		"empty 200 is success":              {code: 200, want: want{Done: true}},
		"explicit success":                  {code: 200, body: `{"status":"Success"}`, want: want{Done: true}},
		"in progress with retry":            {code: 200, body: `{"status":"InProgress","message":"3 records left","retryAfterSeconds":7}`, want: want{After: 7 * time.Second, Message: "webhook: 3 records left"}},
		"in progress without retry":         {code: 200, body: `{"status":"InProgress"}`, want: want{After: pollInterval, Message: "webhook: in progress"}},
		"202 accepted":                      {code: 202, retryAfter: "4", want: want{After: 4 * time.Second, Message: "webhook accepted the request: in progress"}},
		"failure with message":              {code: 200, body: `{"status":"Failure","message":"record locked"}`, want: want{Failed: true, Message: "webhook failed: record locked"}},
		"429 honours Retry-After":           {code: 429, retryAfter: "30", want: want{After: 30 * time.Second, Message: "webhook asked to retry later (HTTP 429)"}},
		"429 without Retry-After":           {code: 429, want: want{After: pollInterval, Message: "webhook asked to retry later (HTTP 429)"}},
		"503 with Retry-After is not now":   {code: 503, retryAfter: "2", want: want{After: 2 * time.Second, Message: "webhook asked to retry later (HTTP 503)"}},
		"503 without Retry-After is failed": {code: 503, body: "upstream down", want: want{Failed: true, Message: "webhook answered HTTP 503: upstream down"}},
		"500 with a JSON message":           {code: 500, body: `{"status":"Failure","message":"db down"}`, want: want{Failed: true, Message: "webhook answered HTTP 500: db down"}},
		"unknown status":                    {code: 200, body: `{"status":"Maybe"}`, want: want{Failed: true, Message: `webhook answered an unknown status "Maybe"`}},
		"2xx body that is not an answer":    {code: 200, body: `<html>ok</html>`, want: want{Failed: true, Message: "webhook answered HTTP 200 without a status: <html>ok</html>"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out := webhookOutcome(tc.code, tc.retryAfter, []byte(tc.body))
			got := want{Done: out.done, After: out.after, Failed: out.err != nil, Message: out.message}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
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
