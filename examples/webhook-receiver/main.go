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
// It uses the standard library only, so that it can be copied as is: replace
// cleanup with the real work.
//
//	webhook-receiver --secret-file=/etc/teardown/secret \
//	    --tls-cert=/etc/tls/tls.crt --tls-key=/etc/tls/tls.key
package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// The request headers Teardown sends.
const (
	// signatureHeader is "t=<unix seconds>,v1=<hex HMAC-SHA256>", the HMAC
	// keyed with the signing secret over "<t>.<body>".
	signatureHeader = "Teardown-Signature"
	// deliveryHeader identifies one request in logs; it is not signed.
	deliveryHeader = "Teardown-Delivery"
	// tolerance is how far a signature's timestamp may be from this clock:
	// an older request is refused as a replay.
	tolerance = 5 * time.Minute
	// maxBody bounds the request read; Teardown's requests are a few KiB.
	maxBody = 1 << 20
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

// Errors of verify.
var (
	errMalformed = errors.New("malformed " + signatureHeader + " header")
	errMismatch  = errors.New("signature does not match")
	errExpired   = errors.New("signature timestamp is too old or in the future")
)

// verify checks a Teardown-Signature header: one of its v1 values must be
// the HMAC-SHA256 of "<t>.<body>" under one of the secrets (several during
// a rotation), compared in constant time, and t must be within tolerance of
// now.
func verify(header string, body []byte, secrets [][]byte, now time.Time) error {
	if len(header) > 1024 {
		return errMalformed
	}
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return errMalformed
		}
		switch k {
		case "t":
			if ts != "" {
				return errMalformed
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return errMalformed
			}
			sigs = append(sigs, sig)
		}
	}
	if ts == "" || len(sigs) == 0 || strings.Trim(ts, "0123456789") != "" {
		return errMalformed
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errMalformed
	}
	matched := false
	for _, secret := range secrets {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(ts))
		m.Write([]byte{'.'})
		m.Write(body)
		want := m.Sum(nil)
		for _, sig := range sigs {
			if hmac.Equal(sig, want) {
				matched = true
			}
		}
	}
	if !matched {
		return errMismatch
	}
	// The timestamp is trusted only once the signature covers it.
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errExpired
	}
	return nil
}

// Receiver serves Teardown's webhook requests.
type Receiver struct {
	// Secrets are the accepted signing secrets: the current one, and the
	// previous one while a rotation is under way.
	Secrets [][]byte
	// Cleanup does the work for one request. It must be idempotent:
	// Teardown calls again after an error, an InProgress answer or a
	// restart.
	Cleanup func(ctx context.Context, req *CleanupRequest) Response
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := rc.Log
	if log == nil {
		log = slog.Default()
	}
	log = log.With("delivery", r.Header.Get(deliveryHeader))
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
	now := time.Now()
	if rc.Now != nil {
		now = rc.Now()
	}
	// Nothing of the request is looked at before its signature is checked.
	if err := verify(r.Header.Get(signatureHeader), body, rc.Secrets, now); err != nil {
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
	resp := rc.Cleanup(r.Context(), &req)
	log.Info("Cleanup request", "policy", req.Policy.Name, "step", req.Step,
		"object", req.Object.Kind+" "+req.Object.Namespace+"/"+req.Object.Name, "status", resp.Status)
	answer(w, http.StatusOK, resp)
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
		rc.Secrets = append(rc.Secrets, b) // the Secret's bytes, as Teardown uses them: no trimming
	}
	if len(rc.Secrets) == 0 {
		return errors.New("--secret-file is required")
	}
	srv := &http.Server{Addr: addr, Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	if certFile == "" {
		slog.Warn("Serving plain http: Teardown calls it only with --webhook-allow-http")
		return srv.ListenAndServe()
	}
	return srv.ListenAndServeTLS(certFile, keyFile)
}
