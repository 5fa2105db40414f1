/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
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
// metadata, never its spec or data.
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
	// RetryAfterSeconds says when to call again, for InProgress.
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

func (r *Runner) webhook(ctx context.Context, pol *policy.Policy, step teardownv1alpha1.Step, t Target) outcome {
	w := step.Webhook
	url, err := webhookURL(w)
	if err != nil {
		return failed(err)
	}
	httpClient, err := r.HTTP.forCABundle(w.CABundle)
	if err != nil {
		return failed(err)
	}
	timeout := defaultWebhookTimeout
	if w.Timeout != nil && w.Timeout.Duration > 0 {
		timeout = w.Timeout.Duration
	}
	body, err := json.Marshal(webhookRequest(pol, step.Name, t))
	if err != nil {
		return failed(fmt.Errorf("encoding the request: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return failed(fmt.Errorf("building the request to %s: %w", url, err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return failed(fmt.Errorf("calling %s: %w", url, err))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	return webhookOutcome(resp.StatusCode, resp.Header.Get("Retry-After"), data)
}

// webhookOutcome interprets an answer: 429 and 503 with Retry-After are "not
// now", honoured as pending; other errors are failures; a 2xx body says
// Success, InProgress or Failure.
func webhookOutcome(code int, retryAfter string, body []byte) outcome {
	after := parseRetryAfter(retryAfter)
	var ans WebhookResponse
	_ = json.Unmarshal(body, &ans)
	if ans.RetryAfterSeconds > 0 {
		after = time.Duration(ans.RetryAfterSeconds) * time.Second
	}
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable && retryAfter != "":
		return pending(after, "webhook asked to retry later (HTTP %d)", code)
	case code < 200 || code > 299:
		return failed(fmt.Errorf("webhook answered HTTP %d: %s", code, firstLine(ans.Message, body)))
	}
	switch ans.Status {
	case "", WebhookSuccess:
		if len(bytes.TrimSpace(body)) > 0 && ans.Status == "" {
			return failed(fmt.Errorf("webhook answered HTTP %d without a status: %s", code, firstLine("", body)))
		}
		if code == http.StatusAccepted {
			return pending(after, "webhook accepted the request: %s", orDefault(ans.Message, "in progress"))
		}
		return done()
	case WebhookInProgress:
		return pending(after, "webhook: %s", orDefault(ans.Message, "in progress"))
	case WebhookFailure:
		return failed(fmt.Errorf("webhook failed: %s", orDefault(ans.Message, "no message")))
	default:
		return failed(fmt.Errorf("webhook answered an unknown status %q", ans.Status))
	}
}

func webhookRequest(pol *policy.Policy, step string, t Target) WebhookRequest {
	apiVersion, kind := t.GVK.ToAPIVersionAndKind()
	return WebhookRequest{
		APIVersion: teardownv1alpha1.GroupVersion.String(), Kind: "CleanupRequest",
		Policy:    PolicyRef{Kind: string(pol.Ref.Kind), Namespace: pol.Ref.Namespace, Name: pol.Ref.Name},
		Step:      step,
		Finalizer: pol.Key,
		Object: WebhookObject{
			APIVersion: apiVersion, Kind: kind, Namespace: t.Obj.GetNamespace(), Name: t.Obj.GetName(),
			UID: string(t.Obj.GetUID()), Labels: t.Obj.GetLabels(), Annotations: t.Obj.GetAnnotations(),
			DeletionTimestamp: t.Obj.GetDeletionTimestamp(),
		},
	}
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

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

func firstLine(msg string, body []byte) string {
	if msg == "" {
		msg = strings.TrimSpace(string(body))
	}
	msg, _, _ = strings.Cut(msg, "\n")
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return orDefault(msg, "no message")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// HTTPClients keeps one HTTP client per CA bundle, so connections are reused
// across calls and certificates are parsed once.
type HTTPClients struct {
	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

// NewHTTPClients returns an empty set of clients.
func NewHTTPClients() *HTTPClients { return &HTTPClients{clients: map[[32]byte]*http.Client{}} }

func (h *HTTPClients) forCABundle(caBundle []byte) (*http.Client, error) {
	key := sha256.Sum256(caBundle)
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[key]; ok {
		return c, nil
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// Every target worker may call the same webhook at once: keep that many
	// connections open instead of http's default of 2 per host.
	transport.MaxIdleConns, transport.MaxIdleConnsPerHost = 256, 64
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("webhook caBundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c := &http.Client{Transport: transport}
	h.clients[key] = c
	return c, nil
}
