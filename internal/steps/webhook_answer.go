/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/teardown-dev/teardown/internal/cleantext"
)

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
		ans.Status = cleantext.Clean(s, maxWebhookStatus)
	}
	if s, ok := wire.Message.(string); ok {
		ans.Message = cleantext.Clean(s, maxWebhookMessage)
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
	var proxyErr *ProxyError
	switch {
	case errors.As(err, &destErr):
		return destErr.Error()
	case errors.As(err, &proxyErr):
		return proxyErr.Error()
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
