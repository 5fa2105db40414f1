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
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
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

func (r *Runner) webhook(ctx context.Context, pol *policy.Policy, key string, step teardownv1alpha1.Step, t Target) outcome {
	w := step.Webhook
	target, err := webhookURL(w)
	if err != nil {
		return transient(err)
	}
	shown := redactURL(target)
	if err := r.HTTP.checkDestination(w); err != nil {
		var destErr *DestinationError
		if errors.As(err, &destErr) {
			return failed(&callError{url: shown, err: err})
		}
		return transient(err)
	}
	httpClient, err := r.HTTP.forCABundle(w.CABundle)
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
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return transient(fmt.Errorf("building the request to %s: %w", shown, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(DeliveryHeader, deliveryID())
	if secret != nil {
		req.Header.Set(SignatureHeader, Signature(secret, r.now(), body))
	}
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

// permanentHTTPStatus lists the 4xx answers that calling again cannot change:
// the request is wrong, not authorized, or sent to the wrong place. Other 4xx
// (408, 409, 425, 429, ...) are about this moment and are retried.
var permanentHTTPStatus = map[int]bool{
	http.StatusBadRequest:          true, // 400
	http.StatusUnauthorized:        true, // 401
	http.StatusForbidden:           true, // 403
	http.StatusNotFound:            true, // 404
	http.StatusMethodNotAllowed:    true, // 405
	http.StatusGone:                true, // 410
	http.StatusUnprocessableEntity: true, // 422
}

// webhookOutcome interprets an answer. 429, and 503 with Retry-After, are
// "not now", honoured as pending. A redirect (never followed) and a
// permanent 4xx are definitive failures, other non-2xx answers transient. A
// 2xx says Success, InProgress or Failure; only Failure is a definitive
// failure. Nothing of the body is repeated but the message field of a
// well-formed answer, bounded and stripped of control characters.
func webhookOutcome(code int, retryAfter string, body []byte) outcome {
	ans, wellFormed := parseWebhookResponse(body)
	after := parseRetryAfter(retryAfter, time.Now())
	if ans.RetryAfter > 0 {
		after = ans.RetryAfter
	}
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable && strings.TrimSpace(retryAfter) != "":
		return pending(after, "webhook asked to retry later (HTTP %d)", code)
	case code >= 300 && code <= 399:
		return failed(&HTTPStatusError{Code: code, Message: "redirects are not followed"})
	case permanentHTTPStatus[code]:
		return failed(&HTTPStatusError{Code: code, Message: ans.Message})
	case code < 200 || code > 299:
		return transient(&HTTPStatusError{Code: code, Message: ans.Message})
	}
	if !wellFormed {
		if len(bytes.TrimSpace(body)) > 0 {
			return transient(fmt.Errorf("webhook answered HTTP %d with a body that is not a well-formed answer", code))
		}
		ans.Status = WebhookSuccess // an empty 2xx body is Success
	}
	switch ans.Status {
	case WebhookSuccess:
		if code == http.StatusAccepted {
			return pending(after, "webhook accepted the request: %s", orDefault(ans.Message, "in progress"))
		}
		return done()
	case WebhookInProgress:
		return pending(after, "webhook: %s", orDefault(ans.Message, "in progress"))
	case WebhookFailure:
		return failed(fmt.Errorf("webhook answered Failure: %s", orDefault(ans.Message, "no message")))
	case "":
		return transient(fmt.Errorf("webhook answered HTTP %d without a status", code))
	default:
		return transient(fmt.Errorf("webhook answered an unknown status %q", ans.Status))
	}
}

// HTTPStatusError is a webhook's non-2xx answer. Message is the message field
// of a well-formed answer, already bounded and cleaned, or empty.
type HTTPStatusError struct {
	Code    int
	Message string
}

func (e *HTTPStatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("webhook answered HTTP %d", e.Code)
	}
	return fmt.Sprintf("webhook answered HTTP %d: %s", e.Code, e.Message)
}

// parsedResponse is a webhook answer as far as it is trusted.
type parsedResponse struct {
	Status     string        // bounded and cleaned
	Message    string        // bounded and cleaned
	RetryAfter time.Duration // capped; 0 when absent or nonsense
}

// parseWebhookResponse reads a well-formed answer: a JSON object. Fields of
// the wrong type are ignored, never echoed.
func parseWebhookResponse(body []byte) (parsedResponse, bool) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return parsedResponse{}, false
	}
	var wire struct {
		Status            any `json:"status"`
		Message           any `json:"message"`
		RetryAfterSeconds any `json:"retryAfterSeconds"`
	}
	if err := json.Unmarshal(trimmed, &wire); err != nil {
		return parsedResponse{}, false
	}
	var ans parsedResponse
	if s, ok := wire.Status.(string); ok {
		ans.Status = cleanText(s, maxWebhookStatus)
	}
	if s, ok := wire.Message.(string); ok {
		ans.Message = cleanText(s, maxWebhookMessage)
	}
	if f, ok := wire.RetryAfterSeconds.(float64); ok {
		ans.RetryAfter = capSeconds(f)
	}
	return ans, true
}

// capSeconds turns a number of seconds into a wait in [0, maxRetryAfter].
func capSeconds(f float64) time.Duration {
	switch {
	case math.IsNaN(f) || f <= 0:
		return 0
	case f >= maxRetryAfter.Seconds():
		return maxRetryAfter
	default:
		return time.Duration(f * float64(time.Second))
	}
}

// cleanText makes text from outside fit to repeat in annotations, Events and
// status: valid UTF-8, no control or invisible formatting characters (line
// breaks and tabs become spaces), at most max bytes.
func cleanText(s string, max int) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == utf8.RuneError:
			continue // invalid UTF-8, or a replacement character: dropped either way
		case c == '\n' || c == '\r' || c == '\t' || c == '\u2028' || c == '\u2029':
			b.WriteByte(' ')
		case unicode.IsControl(c) || unicode.Is(unicode.Cf, c):
			continue // includes bidirectional overrides, which disguise text
		default:
			b.WriteRune(c)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	if len(out) <= max {
		return out
	}
	const more = "..."
	if max < len(more) {
		return ""
	}
	cut := max - len(more)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + more
}

// dropAnnotations says which annotations of the target are left out of a
// webhook request, and why:
//   - kubectl.kubernetes.io/last-applied-configuration holds the whole object
//     as last applied: for a Secret, its data in plain text.
//   - Teardown's own annotations (every key under teardown.dev or a subdomain
//     of it, such as progress.finalizer.teardown.dev/ and steps.teardown.dev/)
//     are the controller's bookkeeping, not the receiver's business; they
//     change on every attempt and carry other steps' messages.
func dropAnnotation(key string) bool {
	if key == corev1.LastAppliedConfigAnnotation {
		return true
	}
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	domain := teardownv1alpha1.GroupVersion.Group // teardown.dev
	return prefix == domain || strings.HasSuffix(prefix, "."+domain)
}

// webhookAnnotations is the target's annotations a webhook receives.
func webhookAnnotations(in map[string]string) map[string]string {
	var out map[string]string
	for k, v := range in {
		if dropAnnotation(k) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(in))
		}
		out[k] = v
	}
	return out
}

func webhookRequest(pol *policy.Policy, key, step string, t Target) WebhookRequest {
	apiVersion, kind := t.GVK.ToAPIVersionAndKind()
	return WebhookRequest{
		APIVersion: teardownv1alpha1.GroupVersion.String(), Kind: "CleanupRequest",
		Policy:    PolicyRef{Kind: string(pol.Ref.Kind), Namespace: pol.Ref.Namespace, Name: pol.Ref.Name},
		Step:      step,
		Finalizer: key,
		Object: WebhookObject{
			APIVersion: apiVersion, Kind: kind, Namespace: t.Obj.GetNamespace(), Name: t.Obj.GetName(),
			UID: string(t.Obj.GetUID()), Labels: t.Obj.GetLabels(), Annotations: webhookAnnotations(t.Obj.GetAnnotations()),
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

// parseRetryAfter reads a Retry-After header, seconds or an HTTP date, as a
// wait in [0, maxRetryAfter]; anything else is 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if strings.Trim(v, "0123456789") == "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil { // only digits: too large
			return maxRetryAfter
		}
		if s >= uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// callError is a failed call. Its message says what kind of failure it was
// and nothing the other end sent (Go's transport quotes a malformed answer's
// first line, which could be another service's banner or secret); the
// original stays in the chain for errors.As.
type callError struct {
	url string
	err error
}

func (e *callError) Error() string { return "calling " + e.url + ": " + describeCallError(e.err) }
func (e *callError) Unwrap() error { return e.err }

func describeCallError(err error) string {
	var (
		destErr     *DestinationError
		dnsErr      *net.DNSError
		unknownCA   x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidCert x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		netErr      net.Error
	)
	switch {
	case errors.As(err, &destErr):
		return destErr.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "no such host"
		}
		return "DNS lookup failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable"
	case errors.As(err, &unknownCA):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &hostnameErr):
		return "TLS: certificate is not valid for this host"
	case errors.As(err, &invalidCert):
		return "TLS: certificate is not valid"
	case errors.As(err, &recordErr):
		return "TLS: the server did not answer in TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	default:
		return "request failed (no valid HTTP answer)"
	}
}

// HTTPClients is the webhook steps' side of the network: one HTTP client per
// CA bundle, so connections are reused across calls and certificates are
// parsed once, every one dialling through the destination guard
// (webhook_dial.go); the operator's WebhookOptions; and the signing secrets
// read lately (webhook_sign.go).
type HTTPClients struct {
	opts    WebhookOptions
	secrets secretCache

	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

// NewHTTPClients returns an empty set of clients with the default options:
// https only, no loopback, link-local, metadata or unspecified destination.
func NewHTTPClients() *HTTPClients { return NewWebhookClients(WebhookOptions{}) }

// NewWebhookClients returns an empty set of clients with the operator's
// options.
func NewWebhookClients(opts WebhookOptions) *HTTPClients {
	opts.AllowedCIDRs = slices.Clone(opts.AllowedCIDRs)
	return &HTTPClients{opts: opts, clients: map[[32]byte]*http.Client{}}
}

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
	// Every connection, TLS or not, is dialled through the guard.
	transport.DialContext = dialContext(h.opts.AllowedCIDRs)
	// No proxy from the environment: a proxy would connect to the
	// destination on the controller's behalf, out of the guard's sight.
	transport.Proxy = nil
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("webhook caBundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c := &http.Client{
		Transport: transport,
		// Redirects are never followed: a receiver could send the call (and
		// its payload) anywhere, including addresses the controller reaches
		// and the policy author does not. A 3xx is reported as a failure.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.clients[key] = c
	return c, nil
}
