/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/teardown-dev/teardown/internal/inuse"
	"github.com/teardown-dev/teardown/internal/queuekey"
)

// The unused step reads every pod and binding, and which ClusterRoles
// aggregate which, through the index of internal/inuse.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings;clusterrolebindings;clusterroles,verbs=list;watch

// RunnerOptions configure NewRunner.
type RunnerOptions struct {
	Webhooks              WebhookOptions
	DefaultServiceAccount string
	// UnusedGrace is how long after its target's deletion an unused step
	// confirms at the soonest (set when the in-use webhook runs).
	UnusedGrace time.Duration
	// WebhookCallsPerTenant bounds the webhook calls a tenant has in flight
	// (DefaultWebhookCallsPerTenant when 0); MaxWebhookCall bounds one call
	// whatever its step's timeout says.
	WebhookCallsPerTenant int
	MaxWebhookCall        time.Duration
}

// NewRunner builds the runner of every step kind on mgr, with what the
// kinds read added to mgr: the in-use index, idle until a policy with an
// unused step is served (Prepare), which wakes an object whose users went.
func NewRunner(mgr manager.Manager, o RunnerOptions, wake func(context.Context, ...queuekey.Request)) (*Runner, error) {
	uses := inuse.New(mgr.GetConfig(), func(ctx context.Context, w inuse.Waiter) {
		wake(ctx, queuekey.For(w.GVK, w.Key))
	})
	uses.Log = mgr.GetLogger()
	if err := mgr.Add(uses); err != nil {
		return nil, fmt.Errorf("adding the index of pods: %w", err)
	}
	return &Runner{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		HTTP:  NewWebhookClients(o.Webhooks),
		Calls: &WebhookCalls{Limit: o.WebhookCallsPerTenant, MaxTimeout: o.MaxWebhookCall, Wake: wake},
		Now:   time.Now,
		Uses:  uses,
		Identities: &Identities{
			Config: mgr.GetConfig(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
			DefaultServiceAccount: o.DefaultServiceAccount,
		},
		UnusedGrace: o.UnusedGrace,
	}, nil
}
