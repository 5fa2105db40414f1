/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/policy"
)

// The seed corpora below run with every `go test`; `go test -fuzz FuzzX`
// explores further.

// FuzzResume: whatever the state annotation holds, Resume never panics,
// never returns an index out of range, and resumes past the first step only
// for a record that names this policy, this version of its steps and the
// step at its index.
func FuzzResume(f *testing.F) {
	pol := fuzzPolicy(f)
	exact := func(step int, name, since string) string {
		b, _ := json.Marshal(map[string]any{"policy": pol.UID, "fingerprint": pol.Fingerprint, "step": step, "name": name, "since": since})
		return string(b)
	}
	for _, seed := range []string{
		"", "{}", "null", "[]", `{"step":1}`, `{"step":99}`, `{"step":-1}`, `{"step":`, `{"step":1e99}`, `{"step":"2"}`,
		exact(1, "b", "2026-03-01T11:00:00Z"), exact(2, "c", "2026-03-01T11:59:00Z"), exact(2, "c", "2099-01-01T00:00:00Z"),
		exact(2, "b", "2026-03-01T11:00:00Z"), exact(3, "d", "2026-03-01T11:00:00Z"), exact(-1, "a", "2026-03-01T11:00:00Z"),
		exact(1, "b", "0001-01-01T00:00:00Z"), exact(1, "b", "not a time"),
		strings.Replace(exact(1, "b", "2026-03-01T11:00:00Z"), string(pol.UID), "other-uid", 1),
		strings.Replace(exact(1, "b", "2026-03-01T11:00:00Z"), pol.Fingerprint, "", 1),
		`{"policy":"policy-uid","fingerprint":"` + pol.Fingerprint + `","step":1,"name":"b","since":"2026-03-01T11:00:00Z","step":0}`,
		strings.Repeat(`{"step":1,`, 500),
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, value string) {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{StateAnnotation(testKey): value}}}
		pos := (Records{}).Resume(obj, pol, testKey, now)
		if pos.Index < 0 || pos.Index >= len(pol.Steps) {
			t.Fatalf("index %d out of range for %q", pos.Index, value)
		}
		if pos.Step != pol.Steps[pos.Index].Name {
			t.Fatalf("step %q is not the name of step %d", pos.Step, pos.Index)
		}
		if pos.Since.After(now) {
			t.Fatalf("since %s is in the future", pos.Since)
		}
		if pos.Index == 0 {
			return
		}
		var rec record
		if err := json.Unmarshal([]byte(value), &rec); err != nil {
			t.Fatalf("resumed at %d from an unparsable record %q", pos.Index, value)
		}
		if rec.Policy != pol.UID || rec.Fingerprint != pol.Fingerprint || rec.Step != pos.Index || rec.Name != pos.Step {
			t.Fatalf("resumed at %d from a record that does not match exactly: %q", pos.Index, value)
		}
		timeout := pol.Steps[pos.Index].Timeout
		if pos.TimedOut != (timeout != nil && now.Sub(pos.Since) > timeout.Duration) {
			t.Fatalf("TimedOut = %v for since %s", pos.TimedOut, pos.Since)
		}
	})
}

func fuzzPolicy(f *testing.F) *policy.Policy {
	url := "https://example.invalid/"
	hook := &teardownv1alpha1.WebhookAction{URL: &url}
	pol, err := policy.FromObject(&teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "policy-uid"},
		Spec: teardownv1alpha1.TeardownPolicySpec{Steps: []teardownv1alpha1.Step{
			{Name: "a", Webhook: hook},
			{Name: "b", Webhook: hook, Timeout: &metav1.Duration{Duration: 5 * time.Minute}},
			{Name: "c", Webhook: hook, Timeout: &metav1.Duration{Duration: time.Minute}},
		}},
	})
	if err != nil {
		f.Fatal(err)
	}
	return pol
}

// FuzzWebhookOutcome: whatever a receiver answers, the outcome is bounded,
// clean text; waits are capped; redirects and permanent 4xx are definitive,
// 5xx never are; and nothing of a body that is not a well-formed answer is
// repeated.
func FuzzWebhookOutcome(f *testing.F) {
	for _, seed := range []struct {
		code       int
		retryAfter string
		body       string
	}{
		{200, "", ""},
		{200, "", `{"status":"Success"}`},
		{200, "", `{"status":"InProgress","message":"3 left","retryAfterSeconds":7}`},
		{200, "", `{"status":"InProgress","retryAfterSeconds":1e308}`},
		{200, "", `{"status":"InProgress","retryAfterSeconds":-1e308}`},
		{200, "", `{"status":"Failure","message":"a\nb\u0000c\u202ed` + strings.Repeat("é", 300) + `"}`},
		{200, "", `{"status":"` + strings.Repeat("\u0007x", 100) + `"}`},
		{200, "", `{"status":["Success"],"message":{"x":1}}`},
		{200, "", "\xff\xfe{"},
		{202, "4", ""},
		{302, "", "AccessKeyId=AKIASECRET"},
		{404, "", `{"message":"no route"}`},
		{429, "99999999999999999999", ""},
		{429, "Wed, 21 Oct 2099 07:28:00 GMT", ""},
		{503, "-3", "upstream down"},
		{500, "", `{"status":"Failure","message":"db down"}`},
		{0, "", ""},
		{-1, "\x00", "\x00"},
		{999, "", "SECRETBODY"},
	} {
		f.Add(seed.code, seed.retryAfter, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, code int, retryAfter string, body []byte) {
		out := webhookOutcome(code, retryAfter, body)
		if out.after < 0 || out.after > maxRetryAfter {
			t.Fatalf("wait %s outside [0, %s]", out.after, maxRetryAfter)
		}
		if out.done && (out.err != nil || out.message != "") {
			t.Fatalf("done with an error: %+v", out)
		}
		if !out.done && out.message == "" {
			t.Fatalf("not done and no message: %+v", out)
		}
		if out.err != nil && out.message != out.err.Error() {
			t.Fatalf("message %q is not the error %q", out.message, out.err)
		}
		checkCleanMessage(t, out.message, 2*maxWebhookMessage)
		switch {
		case code >= 300 && code <= 399 || permanentHTTPStatus[code]:
			if out.err == nil || !out.definitive {
				t.Fatalf("HTTP %d: %+v, want a definitive failure", code, out)
			}
		case code >= 500 && code <= 599:
			if out.definitive {
				t.Fatalf("HTTP %d: %+v is definitive", code, out)
			}
		}
		if _, wellFormed := parseWebhookResponse(body); !wellFormed {
			// Only fixed text, the status code and the retry advice.
			for _, prefix := range []string{"webhook answered HTTP ", "webhook asked to retry later (HTTP ", "webhook accepted the request: in progress"} {
				if strings.HasPrefix(out.message, prefix) {
					return
				}
			}
			if !out.done {
				t.Fatalf("message %q for a body that is not an answer", out.message)
			}
		}
	})
}

// checkCleanMessage asserts what every message repeated in status, Events
// and annotations must be.
func checkCleanMessage(t *testing.T, msg string, limit int) {
	t.Helper()
	if len(msg) > limit {
		t.Fatalf("message of %d bytes: %q", len(msg), msg)
	}
	if !utf8.ValidString(msg) {
		t.Fatalf("message is not valid UTF-8: %q", msg)
	}
	for _, c := range msg {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			t.Fatalf("message holds control character %U: %q", c, msg)
		}
	}
}

// FuzzParseRetryAfter: any header value gives a wait in [0, maxRetryAfter].
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, seed := range []string{"", "0", "7", " 30 ", "-1", "1.5", "600", "601", "99999999999999999999999999",
		"Sun, 01 Mar 2026 12:01:00 GMT", "Sun, 01 Mar 2026 11:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "garbage", "\x00", "+5", "0x10"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d := parseRetryAfter(v, now)
		if d < 0 || d > maxRetryAfter {
			t.Fatalf("parseRetryAfter(%q) = %s, outside [0, %s]", v, d, maxRetryAfter)
		}
	})
}

// FuzzCleanText: the output is valid UTF-8, bounded, without control
// characters, for any input and bound.
func FuzzCleanText(f *testing.F) {
	for _, seed := range []string{"", "plain", "a\nb", "\u202eevil", "\xff\xfe", strings.Repeat("日本", 200), "\x1b[31mred"} {
		f.Add(seed, uint16(maxWebhookMessage))
		f.Add(seed, uint16(5))
	}
	f.Fuzz(func(t *testing.T, s string, bound uint16) {
		max := int(bound % 1024)
		checkCleanMessage(t, cleantext.Clean(s, max), max)
	})
}

// FuzzConditionErrors: a wait condition that fails to evaluate over an
// object holding a secret never repeats the secret, whatever the
// expression.
func FuzzConditionErrors(f *testing.F) {
	const secret = "hunter2-S3CR3T"
	for _, seed := range []string{
		`{"x": true}[objects[0].data.token]`,
		`objects[0].data.token == 1`,
		`int(objects[0].data.token) > 0`,
		`objects[0].data[objects[0].data.token]`,
		`objects[0].data.token`,
		`[1, 2][size(objects[0].data.token)]`,
		`1 / (size(objects) - 1) == 0`,
		`objects.all(o, o.data.token.startsWith("x"))`,
		`duration(objects[0].data.token) > duration("1s")`,
		`timestamp(objects[0].data.token) > timestamp("2020-01-01T00:00:00Z")`,
		`bool(objects[0].data.token)`,
		`double(objects[0].data.token) > 1.0`,
		`objects[0].data.token.matches("[")`,
	} {
		f.Add(seed)
	}
	objects := []any{map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"token": secret}}}
	f.Fuzz(func(t *testing.T, expr string) {
		if strings.Contains(strings.ToLower(expr), "s3cr3t") || strings.Contains(expr, "hunter") || strings.Contains(expr, "\\") {
			t.Skip("the expression itself spells out the secret") // escapes could too
		}
		prg, err := policy.CompileCondition(expr)
		if err != nil {
			t.Skip()
		}
		out := evalCondition(t.Context(), prg, expr, objects)
		if out.err == nil {
			return
		}
		if strings.Contains(out.message, secret) || strings.Contains(out.message, "S3CR3T") {
			t.Fatalf("condition %q: message %q repeats the secret", expr, out.message)
		}
		if out.definitive {
			t.Fatalf("condition %q: an evaluation error is definitive", expr)
		}
	})
}

// TestConditionErrorsSayACategory: the example from issue 9 says what went
// wrong in fixed words.
func TestConditionErrorsSayACategory(t *testing.T) {
	objects := []any{map[string]any{"data": map[string]any{"token": "hunter2"}}}
	cases := map[string]string{
		`{"x": true}[objects[0].data.token]`:          `condition "{\"x\": true}[objects[0].data.token]" failed to evaluate: no such key`,
		`objects[0].data.token > 1`:                   `condition "objects[0].data.token > 1" failed to evaluate: no matching overload (a value of an unexpected type)`,
		`objects[0].data[objects[0].data.token] == 1`: `condition "objects[0].data[objects[0].data.token] == 1" failed to evaluate: no such key`,
		`int(objects[0].data.token) > 0`:              `condition "int(objects[0].data.token) > 0" failed to evaluate: type conversion error`,
		`objects[0].data.token`:                       `condition "objects[0].data.token" returned a string, not a bool`,
		`objects[1].data.token == "x"`:                `condition "objects[1].data.token == \"x\"" failed to evaluate: index out of range`,
	}
	for expr, want := range cases {
		prg, err := policy.CompileCondition(expr)
		if err != nil {
			t.Fatal(err)
		}
		out := evalCondition(t.Context(), prg, expr, objects)
		if out.err == nil || out.definitive || out.message != want {
			t.Errorf("%s: %+v, want a transient error %q", expr, out, want)
		}
	}
}
