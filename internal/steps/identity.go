/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/teardown-dev/teardown/internal/policy"
)

// Identities gives each policy's steps the identity they act with. A
// ClusterTeardownPolicy's authors are cluster administrators: its steps act
// as the controller. A TeardownPolicy's author is trusted no further than
// their own namespace: its steps act as a ServiceAccount of that namespace,
// which the controller impersonates, so the cluster's RBAC decides what
// they may do, not the controller's.
type Identities struct {
	// Config is the controller's own; impersonating clients are copies.
	Config *rest.Config
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// DefaultServiceAccount is the ServiceAccount a TeardownPolicy without
	// spec.serviceAccountName acts as; empty requires every TeardownPolicy
	// to name one.
	DefaultServiceAccount string

	mu      sync.Mutex
	clients map[string]client.Client
}

// ErrNoServiceAccount says a TeardownPolicy names no ServiceAccount and the
// controller has no default.
var ErrNoServiceAccount = errors.New("spec.serviceAccountName is required: the controller runs with no --default-service-account")

// ServiceAccount returns the ServiceAccount pol's steps act as, in pol's
// namespace; "" for a ClusterTeardownPolicy, which acts as the controller.
func (x *Identities) ServiceAccount(pol *policy.Policy) (string, error) {
	if pol.Ref.Kind == policy.KindCluster {
		return "", nil
	}
	switch {
	case pol.ServiceAccountName != "":
		return pol.ServiceAccountName, nil
	case x.DefaultServiceAccount != "":
		return x.DefaultServiceAccount, nil
	}
	return "", ErrNoServiceAccount
}

// Username is the user name the API server knows a ServiceAccount by.
func Username(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// Groups are the groups the API server puts a ServiceAccount in; an
// impersonated ServiceAccount gets the same.
func Groups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// forServiceAccount returns a client that reads and writes straight to the
// API server as the ServiceAccount, one per ServiceAccount.
func (x *Identities) forServiceAccount(namespace, name string) (client.Client, error) {
	user := Username(namespace, name)
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, ok := x.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(x.Config)
	// Only the user name: for a ServiceAccount the API server adds its
	// groups itself, and impersonating groups would need a right to
	// impersonate any group.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: x.Scheme, Mapper: x.Mapper})
	if err != nil {
		return nil, fmt.Errorf("creating a client that acts as %s: %w", user, err)
	}
	if x.clients == nil {
		x.clients = map[string]client.Client{}
	}
	x.clients[user] = c
	return c, nil
}

// ClientsFor returns the reader and the writer pol's steps act with.
func (r *Runner) ClientsFor(pol *policy.Policy) (client.Reader, client.Client, error) {
	return r.clients(pol)
}

// clients returns the reader and the writer pol's steps act with.
func (r *Runner) clients(pol *policy.Policy) (client.Reader, client.Client, error) {
	if r.Identities == nil || pol.Ref.Kind == policy.KindCluster {
		return r.Reader, r.Client, nil
	}
	sa, err := r.Identities.ServiceAccount(pol)
	if err != nil {
		return nil, nil, err
	}
	c, err := r.Identities.forServiceAccount(pol.Ref.Namespace, sa)
	if err != nil {
		return nil, nil, err
	}
	return c, c, nil
}
