/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Command webhook-receiver is an example receiver of Teardown's webhook
// steps. It checks that each request was signed by the teardown-controller
// with the shared secret the policy's signingSecretRef names, and that it is
// recent, before doing anything; then it runs its cleanup and answers the
// webhook contract (Success, InProgress or Failure).
//
// Teardown signs in the Standard Webhooks form (https://www.standardwebhooks.com/):
// webhook-id, webhook-timestamp and webhook-signature. This receiver checks
// them with the Standard Webhooks Go library, as a receiver in any language
// would with its own; it uses nothing of Teardown's, so that it can be
// copied as is: replace cleanup with the real work.
//
//	webhook-receiver --secret-file=/etc/teardown/secret \
//	    --tls-cert=/etc/tls/tls.crt --tls-key=/etc/tls/tls.key
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const (
	// maxBody bounds the request read; Teardown's requests are a few KiB.
	maxBody = 1 << 20
	// maxRemembered bounds the deliveries remembered as done.
	maxRemembered = 10000
)

// CleanupRequest is what Teardown POSTs: the policy, the step, the finalizer
// and the object being deleted (its identity and metadata only).
type CleanupRequest struct {
	APIVersion string `json:"apiVersion"` // teardown.dev/v1alpha1
	Kind       string `json:"kind"`       // CleanupRequest
	Policy     struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace,omitempty"`
		Name      string `json:"name"`
	} `json:"policy"`
	Step      string `json:"step"`
	Finalizer string `json:"finalizer"`
	Object    struct {
		APIVersion        string            `json:"apiVersion"`
		Kind              string            `json:"kind"`
		Namespace         string            `json:"namespace,omitempty"`
		Name              string            `json:"name"`
		UID               string            `json:"uid"`
		Labels            map[string]string `json:"labels,omitempty"`
		Annotations       map[string]string `json:"annotations,omitempty"`
		DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
	} `json:"object"`
}

// Response is the answer: Success, InProgress (call again after
// RetryAfterSeconds) or Failure (the step failed for good; the policy's
// onFailure decides what happens).
type Response struct {
	Status            string `json:"status"`
	Message           string `json:"message,omitempty"`
	RetryAfterSeconds int    `json:"retryAfterSeconds,omitempty"`
}

// Answers.
const (
	Success    = "Success"
	InProgress = "InProgress"
	Failure    = "Failure"
)

// NewVerifier is the Standard Webhooks verifier of a signing secret as the
// Secret holds it: a whsec_<base64> secret is what the library takes as is
// (the whitespace of a file around it left out); any other secret is used as
// its bytes, which Teardown signs with as they are.
func NewVerifier(secret []byte) (*standardwebhooks.Webhook, error) {
	if s := strings.TrimSpace(string(secret)); strings.HasPrefix(s, "whsec_") {
		return standardwebhooks.NewWebhook(s)
	}
	return standardwebhooks.NewWebhookRaw(secret)
}

// Receiver serves Teardown's webhook requests.
type Receiver struct {
	// Verifiers check the signature: the current secret's, and the
	// previous one's while a rotation is under way.
	Verifiers []*standardwebhooks.Webhook
	// Cleanup does the work for one request. It should be idempotent:
	// Teardown calls again after an error, an InProgress answer or a
	// restart, with the same webhook-id.
	Cleanup func(ctx context.Context, req *CleanupRequest) Response
	Log     *slog.Logger

	mu   sync.Mutex
	done map[string]bool // webhook-ids whose cleanup answered Success
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := rc.Log
	if log == nil {
		log = slog.Default()
	}
	id := r.Header.Get(standardwebhooks.HeaderWebhookID)
	log = log.With("webhookID", id)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		answer(w, http.StatusMethodNotAllowed, Response{Status: Failure, Message: "POST only"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		answer(w, http.StatusRequestEntityTooLarge, Response{Status: Failure, Message: "request too large"})
		return
	}
	// Nothing of the request is looked at before its signature is checked:
	// the library checks the HMAC over id.timestamp.body in constant time,
	// then the timestamp against this clock (5 minutes either way).
	if err := rc.verify(body, r.Header); err != nil {
		log.Warn("Refused an unsigned or badly signed request", "err", err)
		// 401 is a permanent answer: Teardown treats it as a definitive
		// failure of the step, and the policy's onFailure decides.
		answer(w, http.StatusUnauthorized, Response{Status: Failure, Message: "request not signed by Teardown"})
		return
	}
	var req CleanupRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Kind != "CleanupRequest" {
		answer(w, http.StatusBadRequest, Response{Status: Failure, Message: "not a CleanupRequest"})
		return
	}
	// The webhook-id is the same on every call of one step for one object:
	// a delivery already done is answered without doing it again.
	if rc.isDone(id) {
		log.Info("Cleanup request already done", "policy", req.Policy.Name, "step", req.Step)
		answer(w, http.StatusOK, Response{Status: Success})
		return
	}
	resp := rc.Cleanup(r.Context(), &req)
	if resp.Status == Success {
		rc.remember(id)
	}
	log.Info("Cleanup request", "policy", req.Policy.Name, "step", req.Step,
		"object", req.Object.Kind+" "+req.Object.Namespace+"/"+req.Object.Name, "status", resp.Status)
	answer(w, http.StatusOK, resp)
}

// verify accepts a request any verifier accepts.
func (rc *Receiver) verify(body []byte, h http.Header) error {
	err := errors.New("no signing secret")
	for _, v := range rc.Verifiers {
		if err = v.Verify(body, h); err == nil {
			return nil
		}
	}
	return err
}

func (rc *Receiver) isDone(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.done[id]
}

func (rc *Receiver) remember(id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.done == nil || len(rc.done) >= maxRemembered {
		// Forgetting is safe: the cleanup is idempotent, this only saves
		// doing it again.
		rc.done = map[string]bool{}
	}
	rc.done[id] = true
}

func answer(w http.ResponseWriter, code int, resp Response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}

// cleanup stands for the real work: here it only logs.
func cleanup(_ context.Context, req *CleanupRequest) Response {
	slog.Info("Cleaning up", "uid", req.Object.UID)
	return Response{Status: Success}
}

func main() {
	addr := flag.String("addr", ":8443", "Address to listen on.")
	secretFile := flag.String("secret-file", "", "File holding the signing secret (a key of the Secret the policy's signingSecretRef names, mounted as a volume).")
	previousSecretFile := flag.String("previous-secret-file", "", "File holding the previous signing secret, accepted as well during a rotation.")
	certFile := flag.String("tls-cert", "", "Serving certificate (PEM); Teardown calls https:// only, unless its operator allowed http.")
	keyFile := flag.String("tls-key", "", "Key of the serving certificate (PEM).")
	flag.Parse()
	if err := run(*addr, *secretFile, *previousSecretFile, *certFile, *keyFile); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

func run(addr, secretFile, previousSecretFile, certFile, keyFile string) error {
	rc := &Receiver{Cleanup: cleanup}
	for _, f := range []string{secretFile, previousSecretFile} {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return fmt.Errorf("%s is empty", f)
		}
		v, err := NewVerifier(b)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rc.Verifiers = append(rc.Verifiers, v)
	}
	if len(rc.Verifiers) == 0 {
		return errors.New("--secret-file is required")
	}
	srv := &http.Server{Addr: addr, Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	if certFile == "" {
		slog.Warn("Serving plain http: Teardown calls it only with --webhook-allow-http")
		return srv.ListenAndServe()
	}
	return srv.ListenAndServeTLS(certFile, keyFile)
}
