/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admit

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

// HeldNamespacesCondition is the entry of the in-use webhook's
// matchConditions that Coverage keeps: the API server calls the webhook
// only for pods of the namespaces it names.
const HeldNamespacesCondition = "held-namespaces"

// MaxCoveredNamespaces bounds the namespaces the condition names; past it,
// it asks about every pod (the webhook's rules and namespaceSelector still
// apply), as the webhook did before it was narrowed.
const MaxCoveredNamespaces = 500

// Coverage keeps the in-use webhook's configuration narrowed to the
// namespaces where an unused step holds an object (a Secret, ConfigMap or
// ServiceAccount being deleted under a policy's key), so that a pod created
// anywhere else costs no webhook call, and none at all while nothing is
// held. It runs on the leader, beside the unused steps that ask for it.
//
// The ordering it gives the unused step: Cover answers, for a namespace,
// since when this process knows that the configuration asking about its
// pods is stored (the end of its own update, or the read that showed it).
// A pod created while the API server has not yet seen that configuration is
// admitted unchecked, but it is stored within the API server's admission
// latency after the check that skipped the webhook, so the step, which
// lists pods no sooner than the grace after that time
// (steps.Runner.unusedGraceLeft), sees it. A namespace leaves the condition
// only when no object of a kind the webhook checks is being deleted there
// under a served policy's key (held), so the configuration that covered a
// target stays in force until the target is gone.
type Coverage struct {
	// Config reads and updates the configuration, straight from the API
	// server (the controller's fenced client: a replica whose lease may
	// have passed writes nothing).
	Config client.Client
	// Cache lists the metadata of guarded objects (the manager's cache,
	// whose informers the guarded controller started for the kinds
	// served).
	Cache client.Reader
	// Index is the policies in force.
	Index *policy.Index
	// Name is the ValidatingWebhookConfiguration holding InUseWebhookName.
	Name string
	// Wake runs the cleanups waiting for a namespace once it is covered.
	Wake func(context.Context, ...queuekey.Request)
	// PruneEvery is how often namespaces no longer held leave the
	// condition; none leaves before PruneAfterStart from the start, so
	// that a new leader keeps what an earlier one covered until its
	// policies are served again.
	PruneEvery, PruneAfterStart time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	kick chan struct{}

	mu sync.Mutex
	// since holds every namespace covered or asked for: when its coverage
	// was seen stored, zero while not yet.
	since   map[string]time.Time
	waiters map[string][]queuekey.Request
	// asked is when each namespace was last asked for, in Cover's calls
	// (calls counts them): a namespace asked for while pruning checked it
	// stays, whatever the check found.
	asked map[string]uint64
	calls uint64
	err   error
	// everything: the configuration read at start asked about every pod
	// (more namespaces than MaxCoveredNamespaces), whose names are not
	// known; it keeps asking so until PruneAfterStart.
	everything bool
	started    time.Time
}

// NewCoverage returns a Coverage of the in-use webhook of configuration
// name, to add to the manager.
func NewCoverage(config client.Client, cache client.Reader, index *policy.Index, name string, wake func(context.Context, ...queuekey.Request)) *Coverage {
	return &Coverage{
		Config: config, Cache: cache, Index: index, Name: name, Wake: wake,
		PruneEvery: 30 * time.Second, PruneAfterStart: time.Minute,
		kick: make(chan struct{}, 1), since: map[string]time.Time{}, waiters: map[string][]queuekey.Request{}, asked: map[string]uint64{},
	}
}

func (c *Coverage) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

// Cover asks that the pods of namespace ns be checked by the in-use
// webhook, and answers since when the configuration doing so is known
// stored; zero until then, with the last error of keeping it when there is
// one, and w is woken once it is.
func (c *Coverage) Cover(ns string, w queuekey.Request) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.asked[ns] = c.calls
	if since := c.since[ns]; !since.IsZero() {
		return since, nil
	}
	c.since[ns] = time.Time{}
	if !slices.Contains(c.waiters[ns], w) {
		c.waiters[ns] = append(c.waiters[ns], w)
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return time.Time{}, c.err
}

// Start keeps the configuration until ctx ends.
func (c *Coverage) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("inuse-coverage")
	ctx = logf.IntoContext(ctx, log)
	c.mu.Lock()
	c.started = c.now()
	c.mu.Unlock()
	prune := time.NewTicker(c.PruneEvery)
	defer prune.Stop()
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		pruning := false
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-retry.C:
		case <-prune.C:
			pruning = true
		}
		if err := c.sync(ctx, pruning); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Could not keep the in-use webhook's namespaces; retrying")
			retry.Reset(time.Second)
		}
	}
}

// sync writes the namespaces wanted into the configuration (after dropping,
// when pruning, those no longer held) and marks them covered.
func (c *Coverage) sync(ctx context.Context, pruning bool) error {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := c.Config.Get(ctx, client.ObjectKey{Name: c.Name}, cfg); err != nil {
		return c.failed(fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", c.Name, err))
	}
	i := slices.IndexFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == InUseWebhookName })
	if i < 0 {
		return c.failed(fmt.Errorf("ValidatingWebhookConfiguration %s has no webhook named %s", c.Name, InUseWebhookName))
	}
	stored, all := HeldNamespaces(cfg.Webhooks[i].MatchConditions)

	c.mu.Lock()
	// What the configuration names (an earlier leader's) is kept like what
	// was asked for here: only pruning lets a namespace go.
	for _, ns := range stored {
		if _, ok := c.since[ns]; !ok {
			c.since[ns] = time.Time{}
		}
	}
	if all && c.now().Sub(c.started) < c.PruneAfterStart {
		c.everything = true
	}
	prune := pruning && c.now().Sub(c.started) >= c.PruneAfterStart
	if prune {
		c.everything = false
	}
	candidates := c.namespaces()
	checked := c.calls
	c.mu.Unlock()

	if prune {
		var gone []string
		for _, ns := range candidates {
			if !c.held(ctx, ns) {
				gone = append(gone, ns)
			}
		}
		c.mu.Lock()
		for _, ns := range gone {
			// A step that asked since the check began may hold an object
			// the check did not see yet: the namespace stays. One that
			// asked before it holds an object the cache already showed.
			if len(c.waiters[ns]) == 0 && c.asked[ns] <= checked {
				delete(c.since, ns)
				delete(c.asked, ns)
			}
		}
		c.mu.Unlock()
	}

	c.mu.Lock()
	want := c.namespaces()
	everything := c.everything
	c.mu.Unlock()

	next := cfg.DeepCopy()
	w := &next.Webhooks[i]
	cond := admissionregistrationv1.MatchCondition{Name: HeldNamespacesCondition, Expression: HeldExpression(want, everything)}
	if j := slices.IndexFunc(w.MatchConditions, func(m admissionregistrationv1.MatchCondition) bool { return m.Name == HeldNamespacesCondition }); j >= 0 {
		w.MatchConditions[j] = cond
	} else {
		w.MatchConditions = append(w.MatchConditions, cond)
	}
	if !equality.Semantic.DeepEqual(cfg.Webhooks, next.Webhooks) {
		// Our own configuration, read just now: the resourceVersion is the
		// optimistic lock.
		if err := c.Config.Update(ctx, next); err != nil {
			return c.failed(fmt.Errorf("updating the namespaces of ValidatingWebhookConfiguration %s: %w", c.Name, err))
		}
		logf.FromContext(ctx).V(1).Info("The in-use webhook asks about the pods of these namespaces", "namespaces", want, "everything", everything)
	}

	// Stored now (written, or read as it is): covered since this moment.
	covered := c.now()
	var wake []queuekey.Request
	c.mu.Lock()
	c.err = nil
	for _, ns := range want {
		if since, ok := c.since[ns]; ok && since.IsZero() {
			c.since[ns] = covered
			wake = append(wake, c.waiters[ns]...)
			delete(c.waiters, ns)
		}
	}
	c.mu.Unlock()
	if len(wake) > 0 {
		c.Wake(ctx, wake...)
	}
	return nil
}

// failed records err for Cover to report and forgets every coverage: the
// configuration is gone or not the one expected, so nothing it covered is
// known to be covered still.
func (c *Coverage) failed(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	for ns := range c.since {
		c.since[ns] = time.Time{}
	}
	return err
}

// namespaces returns the namespaces covered or asked for, sorted; c.mu is
// held.
func (c *Coverage) namespaces() []string {
	out := make([]string, 0, len(c.since))
	for ns := range c.since {
		out = append(out, ns)
	}
	slices.Sort(out)
	return out
}

// held reports whether an object of a kind the webhook checks is being
// deleted in ns under the key of a served policy (of any policy: more than
// the unused steps need, never less). A read that fails counts as held.
func (c *Coverage) held(ctx context.Context, ns string) bool {
	keys := map[string]bool{}
	for _, s := range c.Index.All() {
		for _, k := range s.Keys {
			keys[k.Key] = true
		}
	}
	for _, gk := range heldKinds {
		gvk := corev1.SchemeGroupVersion.WithKind(gk.Kind)
		if len(c.Index.ForKind(gvk)) == 0 {
			continue // not watched: no policy guards this kind
		}
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(gk.Kind + "List"))
		if err := c.Cache.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			logf.FromContext(ctx).Info("Could not list objects; keeping the namespace checked", "namespace", ns, "kind", gk.Kind, "err", err.Error())
			return true
		}
		for _, o := range list.Items {
			if o.DeletionTimestamp != nil && slices.ContainsFunc(o.Finalizers, func(f string) bool { return keys[f] }) {
				return true
			}
		}
	}
	return false
}

// HeldExpression is the CEL of HeldNamespacesCondition for namespaces:
// false for none (the webhook is never called), every pod when everything
// is set or past MaxCoveredNamespaces.
func HeldExpression(namespaces []string, everything bool) string {
	switch {
	case everything || len(namespaces) > MaxCoveredNamespaces:
		return "true"
	case len(namespaces) == 0:
		return "false"
	}
	quoted := make([]string, len(namespaces))
	for i, ns := range namespaces {
		quoted[i] = strconv.Quote(ns)
	}
	return "request.namespace in [" + strings.Join(quoted, ", ") + "]"
}

var quotedName = regexp.MustCompile(`"[^"\\]*"`)

// HeldNamespaces reads the namespaces HeldNamespacesCondition names among
// conditions, as HeldExpression wrote them; all reports one that asks
// about every pod. None is named when the entry is missing (the installer's
// configuration, before the controller first narrowed it).
func HeldNamespaces(conditions []admissionregistrationv1.MatchCondition) (namespaces []string, all bool) {
	j := slices.IndexFunc(conditions, func(m admissionregistrationv1.MatchCondition) bool { return m.Name == HeldNamespacesCondition })
	if j < 0 {
		return nil, false
	}
	expr := strings.TrimSpace(conditions[j].Expression)
	if expr == "true" {
		return nil, true
	}
	for _, q := range quotedName.FindAllString(expr, -1) {
		if ns, err := strconv.Unquote(q); err == nil {
			namespaces = append(namespaces, ns)
		}
	}
	return namespaces, false
}
