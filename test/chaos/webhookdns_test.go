/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"context"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestTenantWebhookStaysInItsNamespace: a TeardownPolicy's webhook URL may
// name only Services and pods of its own namespace, in every form the
// cluster's DNS reads (issue 16, family 7). The controller runs as a
// process. Each form naming another namespace (the four the issue found
// accepted, and .svc, which was refused before) makes the policy
// Ready=False ClusterScopedKind with a message saying what the host names;
// the objects it would guard get no finalizer and go without a call. The
// same forms naming the policy's own namespace are accepted (Ready=True).
// A policy calling the receiver by its address, in the same run, reaches it
// once: the receiver does count calls that are made.
func TestTenantWebhookStaysInItsNamespace(t *testing.T) {
	testenv.SkipShort(t)
	tenant, victim := newNamespace(t), newNamespace(t)
	srv := newCleanupServer(t, func(webhookRequest) answer { return success })
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	startController(t, "controller")

	hook := func(name, host string) *teardownv1alpha1.TeardownPolicy {
		target := "https://" + net.JoinHostPort(host, port) + "/cleanup"
		return &teardownv1alpha1.TeardownPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: name},
			Spec: teardownv1alpha1.TeardownPolicySpec{
				Targets: []teardownv1alpha1.Target{configMapTarget(labels("app", name))},
				Steps:   []teardownv1alpha1.Step{{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{URL: &target, CABundle: srv.CABundle}}},
			},
		}
	}
	forms := []struct {
		name string
		host func(ns string) string
		// want is in the refusal's message for namespace victim.
		want string
	}{
		{"svc-ns", func(ns string) string { return "internal." + ns }, "webhook.url names a Service of namespace " + victim + " (host internal." + victim + ")"},
		{"short", func(string) string { return "internal" }, "webhook.url host internal is a single label, which the cluster's resolver completes in the controller's namespace"},
		{"headless", func(ns string) string { return "db-0.db." + ns + ".svc.cluster.local" }, "webhook.url names a pod of the headless Service db of namespace " + victim},
		{"pod", func(ns string) string { return "10-1-2-3." + ns + ".pod.cluster.local" }, "webhook.url names a pod address of namespace " + victim},
		{"svc-ns-svc", func(ns string) string { return "internal." + ns + ".svc" }, "webhook.url names a Service of namespace " + victim},
	}

	// The control: a policy calling the receiver by address.
	control := hook("control", "127.0.0.1")
	create(t, control)
	if c := waitReady(t, control, 30*time.Second); c.Status != metav1.ConditionTrue {
		t.Fatalf("policy control: Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	}

	refused := map[string]*teardownv1alpha1.TeardownPolicy{}
	for _, f := range forms {
		pol := hook("victim-"+f.name, f.host(victim))
		create(t, pol)
		refused[f.name] = pol
	}
	for _, f := range forms {
		pol := refused[f.name]
		c := waitReady(t, pol, 30*time.Second)
		if c.Status != metav1.ConditionFalse || c.Reason != teardownv1alpha1.ClusterScopedKindReason || !strings.Contains(c.Message, f.want) {
			t.Errorf("policy %s (%s): Ready=%s %s %q; want False %s containing %q", pol.Name, *pol.Spec.Steps[0].Webhook.URL,
				c.Status, c.Reason, c.Message, teardownv1alpha1.ClusterScopedKindReason, f.want)
		}
	}
	// Negative control: the same forms for the tenant's own namespace. (The
	// short name is never accepted: it names the controller's namespace.)
	for _, f := range forms {
		if f.name == "short" {
			continue
		}
		pol := hook("own-"+f.name, f.host(tenant))
		create(t, pol)
		if c := waitReady(t, pol, 30*time.Second); c.Status != metav1.ConditionTrue {
			t.Errorf("policy %s (%s): Ready=%s %s: %s; want True", pol.Name, *pol.Spec.Steps[0].Webhook.URL, c.Status, c.Reason, c.Message)
		}
	}

	// Objects the control and each refused policy would guard: the
	// control's gets its key and its call; the others get no key (checked
	// once the control's, created after them, carries its own) and go at
	// once, uncalled.
	var guarded []*corev1.ConfigMap
	for _, f := range forms {
		cm := configMap(tenant, "victim-"+f.name, labels("app", "victim-"+f.name))
		create(t, cm)
		guarded = append(guarded, cm)
	}
	controlCM := configMap(tenant, "control", labels("app", "control"))
	create(t, controlCM)
	controlKey := tenant + ".teardown.dev/control"
	testenv.Eventually(t, 30*time.Second, "the control's ConfigMap to carry "+controlKey, func(ctx context.Context) (bool, error) {
		return carries(ctx, controlCM, controlKey)
	})
	for _, cm := range guarded {
		if fins, _, err := finalizersOf(t.Context(), cm); err != nil || len(fins) > 0 {
			t.Errorf("ConfigMap %s, guarded by a refused policy, carries %q (%v)", cm.Name, fins, err)
		}
		if err := k8s.Delete(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := k8s.Delete(t.Context(), controlCM); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the control's ConfigMap to go after its call", testenv.Gone(k8s, controlCM))
	for _, cm := range guarded {
		testenv.Eventually(t, 10*time.Second, "ConfigMap "+cm.Name+", guarded by a refused policy, to go", testenv.Gone(k8s, cm))
	}
	if n := srv.callsFor(controlCM.UID); n != 1 {
		t.Errorf("the control's object got %d calls, want 1", n)
	}
	srv.mu.Lock()
	total := srv.total
	srv.mu.Unlock()
	if total != 1 {
		t.Errorf("the receiver got %d calls, want only the control's", total)
	}
}
