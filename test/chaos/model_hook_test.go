/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// hookMode is how the model's receiver answers for one (policy, step).
type hookMode int

const (
	hookSuccess    hookMode = iota // Success at once
	hookInProgress                 // InProgress for the first N calls per object, then Success
	hookFailure                    // 2xx Failure: a definitive failure, onFailure applies
	hookError                      // HTTP 500: transient, retried whatever onFailure says
	hookDown                       // the connection is closed without an answer: transient
	hookHang                       // no answer until the caller gives up (a hostile tenant's receiver): transient
)

func (m hookMode) String() string {
	return [...]string{"Success", "InProgress", "Failure", "500", "down", "hang"}[m]
}

// hookBehaviour is what the generator chose for one (policy, step).
type hookBehaviour struct {
	Mode hookMode
	N    int // InProgress answers per object before Success
}

// ledgerEntry is one call the model's receiver got, recorded before the
// answer is written, so before the controller can act on it.
type ledgerEntry struct {
	Seq int
	At  time.Time
	// Path is the policy the step's URL was written for (kind/ns/name);
	// Policy is the policy the request says it comes from.
	Path, Policy string
	Step         string
	Finalizer    string
	UID          types.UID
	Namespace    string
	Name         string
	Outcome      hookMode
	InProgress   bool // hookInProgress answered InProgress this time
}

// answered says what the controller heard: Success, InProgress, Failure or
// a transient error.
func (e ledgerEntry) answered() string {
	switch {
	case e.Outcome == hookInProgress && e.InProgress:
		return "InProgress"
	case e.Outcome == hookInProgress:
		return "Success"
	}
	return e.Outcome.String()
}

// modelHooks is every receiver of one model run: one HTTPS server on
// 127.0.0.1 whose path names the policy, with a ledger of every call.
type modelHooks struct {
	*httptest.Server
	CABundle []byte

	mu         sync.Mutex
	behaviours map[string]hookBehaviour // policy/step
	calls      map[string]int           // policy/step/uid
	healed     bool
	healCh     chan struct{} // closed by heal: held calls end
	ledger     []ledgerEntry
}

func newModelHooks(t *testing.T) *modelHooks {
	t.Helper()
	h := &modelHooks{behaviours: map[string]hookBehaviour{}, calls: map[string]int{}, healCh: make(chan struct{})}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.Listener = l
	h.StartTLS()
	t.Cleanup(h.Close)
	h.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.Certificate().Raw})
	return h
}

// policyID names a policy in the ledger and in the receiver's path.
func policyID(kind, ns, name string) string {
	if ns == "" {
		return kind + "/" + name
	}
	return kind + "/" + ns + "/" + name
}

// step returns a webhook step of policy pol calling this receiver.
func (h *modelHooks) step(pol, name string, onFailure teardownv1alpha1.FailureAction, timeout time.Duration) teardownv1alpha1.Step {
	url := h.URL + "/hook/" + pol
	s := teardownv1alpha1.Step{Name: name, OnFailure: onFailure,
		Webhook: &teardownv1alpha1.WebhookAction{URL: &url, CABundle: h.CABundle}}
	if timeout > 0 {
		s.Timeout = durationPtr(timeout)
	}
	return s
}

// set chooses how (pol, step) answers from now on.
func (h *modelHooks) set(pol, step string, b hookBehaviour) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.behaviours[pol+"/"+step] = b
}

// heal makes every receiver answer Success from now on.
func (h *modelHooks) heal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.healed {
		close(h.healCh)
	}
	h.healed = true
}

func (h *modelHooks) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Policy    struct{ Kind, Namespace, Name string } `json:"policy"`
		Step      string                                 `json:"step"`
		Finalizer string                                 `json:"finalizer"`
		Object    struct {
			Namespace, Name string
			UID             types.UID `json:"uid"`
		} `json:"object"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf("bad request: %v", err), http.StatusBadRequest)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/hook/")
	h.mu.Lock()
	b := h.behaviours[path+"/"+req.Step]
	if h.healed {
		b = hookBehaviour{Mode: hookSuccess}
	}
	ck := path + "/" + req.Step + "/" + string(req.Object.UID)
	h.calls[ck]++
	e := ledgerEntry{Seq: len(h.ledger), At: time.Now(), Path: path,
		Policy: policyID(req.Policy.Kind, req.Policy.Namespace, req.Policy.Name),
		Step:   req.Step, Finalizer: req.Finalizer, UID: req.Object.UID,
		Namespace: req.Object.Namespace, Name: req.Object.Name, Outcome: b.Mode,
		InProgress: b.Mode == hookInProgress && h.calls[ck] <= b.N}
	h.ledger = append(h.ledger, e)
	h.mu.Unlock()

	switch e.answered() {
	case "hang":
		// Hold the call until the controller gives up on it (the step's
		// webhook timeout, 10 s by default) or the run heals; the answer
		// that follows is never read as anything but a transient error.
		select {
		case <-r.Context().Done():
		case <-h.healCh:
		}
		http.Error(w, "held", http.StatusServiceUnavailable)
		return
	case "down":
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "down", http.StatusBadGateway)
		return
	case "500":
		http.Error(w, `{"message":"injected"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": e.answered(), "message": "model receiver", "retryAfterSeconds": 1})
}

// entries returns a copy of the ledger.
func (h *modelHooks) entries() []ledgerEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ledgerEntry(nil), h.ledger...)
}
