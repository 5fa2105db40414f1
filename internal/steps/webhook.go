/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

// WebhookRequest is the body POSTed to a webhook step.
type WebhookRequest struct {
	APIVersion string        `json:"apiVersion"` // teardown.dev/v1alpha1
	Kind       string        `json:"kind"`       // CleanupRequest
	Policy     PolicyRef     `json:"policy"`
	Step       string        `json:"step"`
	Finalizer  string        `json:"finalizer"`
	Object     WebhookObject `json:"object"`
}

// PolicyRef names the policy in a webhook request.
type PolicyRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// WebhookObject is the target as a webhook sees it: its identity and
// metadata, never its spec or data. Annotations leave out
// kubectl.kubernetes.io/last-applied-configuration and Teardown's own (see
// dropAnnotation).
type WebhookObject struct {
	APIVersion        string            `json:"apiVersion"`
	Kind              string            `json:"kind"`
	Namespace         string            `json:"namespace,omitempty"`
	Name              string            `json:"name"`
	UID               string            `json:"uid"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	DeletionTimestamp *metav1.Time      `json:"deletionTimestamp,omitempty"`
}

// WebhookResponse is what a webhook answers. An empty 2xx body is Success.
type WebhookResponse struct {
	// Status is Success, InProgress or Failure.
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	// RetryAfterSeconds says when to call again, for InProgress; at most
	// 10 minutes are honoured (maxRetryAfter), and the same cap applies to a
	// Retry-After header.
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
}

// Webhook answers.
const (
	WebhookSuccess    = "Success"
	WebhookInProgress = "InProgress"
	WebhookFailure    = "Failure"
)

// defaultWebhookTimeout bounds one call when the step does not say.
const defaultWebhookTimeout = 10 * time.Second

// maxWebhookBody bounds how much of an answer is read.
const maxWebhookBody = 64 << 10

// maxWebhookMessage bounds the part of an answer that is repeated in the
// target's annotations, Events and the policy's status.
const maxWebhookMessage = 256

// maxWebhookStatus bounds an unknown status repeated in a message.
const maxWebhookStatus = 64

// webhook runs a webhook step: with Runner.Calls, off the worker (its call
// runs in WebhookCalls, and this run collects the answer once it came);
// without, the call is made here.
func (r *Runner) webhook(ctx context.Context, pol *policy.Policy, key string, step teardownv1alpha1.Step, t Object) outcome {
	if r.Calls == nil {
		return r.callWebhook(ctx, pol, key, step, t, nil)
	}
	k := callOf(pol, key, step.Name, t)
	switch out, state := r.Calls.collect(k); state {
	case callAnswered:
		return out
	case callInFlight:
		return awaiting("waiting for the webhook's answer")
	}
	if out, held := r.Calls.heldBack(k); held {
		return out
	}
	return r.callWebhook(ctx, pol, key, step, t, func(timeout time.Duration, do func(context.Context) outcome) outcome {
		target := queuekey.For(t.GVK, client.ObjectKeyFromObject(t.Obj))
		if started, n := r.Calls.start(k, tenantOf(pol), target, timeout, do); !started {
			return awaiting("waiting for a webhook call slot: %d calls of this policy's %s are in flight, the most it may have at once", n, tenantNoun(pol))
		}
		return awaiting("waiting for the webhook's answer")
	})
}

// tenantNoun says whose call slots a policy's calls take, in messages.
func tenantNoun(pol *policy.Policy) string {
	if pol.Ref.Kind == policy.KindNamespaced {
		return "namespace"
	}
	return "ClusterTeardownPolicy"
}

// callWebhook prepares the call of a webhook step and makes it: at once
// when async is nil, else by handing async the call and its timeout.
func (r *Runner) callWebhook(ctx context.Context, pol *policy.Policy, key string, step teardownv1alpha1.Step, t Object, async func(time.Duration, func(context.Context) outcome) outcome) outcome {
	w := step.Webhook
	target, err := webhookURL(w)
	if err != nil {
		return transient(err)
	}
	shown := redactURL(target)
	if err := r.HTTP.CheckDestination(w, WebhookNamespace(pol)); err != nil {
		var destErr *DestinationError
		if errors.As(err, &destErr) {
			return failed(&callError{url: shown, err: err})
		}
		return transient(err)
	}
	httpClient, err := r.HTTP.forURL(w.CABundle, WebhookNamespace(pol), target)
	if err != nil {
		return transient(err)
	}
	timeout := defaultWebhookTimeout
	if w.Timeout != nil && w.Timeout.Duration > 0 {
		timeout = w.Timeout.Duration
	}
	body, err := json.Marshal(webhookRequest(pol, key, step.Name, t))
	if err != nil {
		return transient(fmt.Errorf("encoding the request: %w", err))
	}
	var secret []byte
	if w.SigningSecretRef != nil {
		if secret, err = r.signingSecret(ctx, pol, w.SigningSecretRef); err != nil {
			return transient(err)
		}
	}
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	if err := setSignatureHeaders(header, secret, DeliveryID(pol, key, step.Name, t), r.now(), body); err != nil {
		return transient(err)
	}
	do := func(ctx context.Context) outcome {
		return postWebhook(ctx, httpClient, target, shown, header, body)
	}
	if async != nil {
		return async(timeout, do)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return do(ctx)
}

// postWebhook makes one webhook call and reads its answer.
func postWebhook(ctx context.Context, httpClient *http.Client, target, shown string, header http.Header, body []byte) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return transient(fmt.Errorf("building the request to %s: %w", shown, err))
	}
	req.Header = header
	resp, err := httpClient.Do(req)
	if err != nil {
		var destErr *DestinationError
		if errors.As(err, &destErr) {
			// The guard refused every address the name resolved to: the
			// same URL is refused on every call.
			return failed(&callError{url: shown, err: err})
		}
		return transient(&callError{url: shown, err: err})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	if err != nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		// A 2xx whose body broke off is not an answer; other codes are
		// judged by their status alone.
		return transient(&callError{url: shown, err: err})
	}
	return webhookOutcome(resp.StatusCode, resp.Header.Get("Retry-After"), data)
}

func webhookURL(w *teardownv1alpha1.WebhookAction) (string, error) {
	switch {
	case w.URL != nil:
		return *w.URL, nil
	case w.Service != nil:
		port := int32(443)
		if w.Service.Port != nil {
			port = *w.Service.Port
		}
		path := ""
		if w.Service.Path != nil {
			path = *w.Service.Path
		}
		return fmt.Sprintf("https://%s.%s.svc:%d%s", w.Service.Name, w.Service.Namespace, port, path), nil
	default:
		return "", errors.New("webhook has neither url nor service")
	}
}

// redactURL is the URL as messages show it: without a password or query,
// which may carry tokens.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the webhook URL"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}
