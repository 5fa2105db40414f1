/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Causes of this family (see report.go).
const (
	CauseAPIServiceUnavailable        = "APIServiceUnavailable"        // A1
	CauseAPIServiceBackendInNamespace = "APIServiceBackendInNamespace" // A2
	CauseWebhookBlocksDelete          = "WebhookBlocksDelete"          // A5
)

// webhooksByName indexes every admission webhook.
type webhookInfo struct {
	Config        string
	Kind          string
	Name          string
	FailurePolicy string
	Operations    []string
	Service       *admissionregistrationv1.ServiceReference
	URL           string
}

func (e *Explainer) webhooks(ctx context.Context) []webhookInfo {
	var out []webhookInfo
	ops := func(rules []admissionregistrationv1.RuleWithOperations) []string {
		var o []string
		for _, r := range rules {
			for _, op := range r.Operations {
				o = append(o, string(op))
			}
		}
		return o
	}
	fp := func(p *admissionregistrationv1.FailurePolicyType) string {
		if p == nil {
			return string(admissionregistrationv1.Fail)
		}
		return string(*p)
	}
	url := func(u *string) string {
		if u == nil {
			return ""
		}
		return *u
	}
	if l, err := e.c.ValidatingWebhookConfigurations(ctx); err == nil {
		for _, c := range l {
			for _, w := range c.Webhooks {
				out = append(out, webhookInfo{Config: c.Name, Kind: "ValidatingWebhookConfiguration", Name: w.Name, FailurePolicy: fp(w.FailurePolicy), Operations: ops(w.Rules), Service: w.ClientConfig.Service, URL: url(w.ClientConfig.URL)})
			}
		}
	}
	if l, err := e.c.MutatingWebhookConfigurations(ctx); err == nil {
		for _, c := range l {
			for _, w := range c.Webhooks {
				out = append(out, webhookInfo{Config: c.Name, Kind: "MutatingWebhookConfiguration", Name: w.Name, FailurePolicy: fp(w.FailurePolicy), Operations: ops(w.Rules), Service: w.ClientConfig.Service, URL: url(w.ClientConfig.URL)})
			}
		}
	}
	return out
}

// serviceBackend describes whether a Service has ready endpoints.
func (e *Explainer) serviceBackend(ctx context.Context, ns, name string) (string, bool) {
	if _, err := e.c.Service(ctx, ns, name); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("Service %s/%s does not exist", ns, name), false
		}
		return "", true
	}
	slices, err := e.c.EndpointSlices(ctx, ns)
	if err != nil {
		return "", true
	}
	ready := 0
	for _, s := range slices {
		if s.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready++
			}
		}
	}
	if ready == 0 {
		return fmt.Sprintf("Service %s/%s has no ready endpoints", ns, name), false
	}
	return fmt.Sprintf("Service %s/%s has %d ready endpoint(s)", ns, name, ready), true
}

// apiServiceFinding reports an APIService that is not Available.
func (e *Explainer) apiServiceFinding(ctx context.Context, s unstructured.Unstructured, ns string) (Finding, bool) {
	conds, _, _ := unstructured.NestedSlice(s.Object, "status", "conditions")
	status, reason, msg := "Unknown", "", ""
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Available" {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			msg, _ = m["message"].(string)
		}
	}
	if status == "True" {
		return Finding{}, false
	}
	ref := ObjectRef{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Resource: "apiservices", Name: s.GetName(), UID: string(s.GetUID())}
	svcNS, _, _ := unstructured.NestedString(s.Object, "spec", "service", "namespace")
	svcName, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
	f := Finding{Cause: CauseAPIServiceUnavailable, Catalog: "A1", Severity: SeverityBlocker, Object: &ref,
		Message:  fmt.Sprintf("APIService %s is Available=%s (%s): %s; namespace deletion needs every API group to be discoverable", s.GetName(), status, reason, msg),
		FixOwner: "owner of the aggregated API (often the platform team)",
		Remedy:   fmt.Sprintf("fix its backend (pods, network policy, certificates); if the API is abandoned, delete it: kubectl delete apiservice %s", s.GetName()),
		Leaks:    "deleting the APIService only removes the group from discovery; data held by the aggregated server stays there"}
	if svcName != "" {
		if ev, _ := e.serviceBackend(ctx, svcNS, svcName); ev != "" {
			f.Message += "; " + ev
		}
	}
	if svcNS == ns {
		f.Cause, f.Catalog = CauseAPIServiceBackendInNamespace, "A2"
		f.Message = fmt.Sprintf("APIService %s is served from Service %s/%s inside the namespace being deleted: deleting the namespace killed its backend, and the missing API now blocks the namespace (Available=%s, %s)", s.GetName(), svcNS, svcName, status, reason)
		f.FixOwner = "operator vendor; cluster admin"
		f.Remedy = fmt.Sprintf("delete the APIService (kubectl delete apiservice %s), or reinstall its backend in another namespace", s.GetName())
	}
	return f, true
}

func (e *Explainer) webhookFinding(ctx context.Context, w webhookInfo, ns string) Finding {
	ref := ObjectRef{APIVersion: "admissionregistration.k8s.io/v1", Kind: w.Kind, Name: w.Config}
	backend := w.URL
	if w.Service != nil {
		backend = fmt.Sprintf("Service %s/%s", w.Service.Namespace, w.Service.Name)
		if ev, _ := e.serviceBackend(ctx, w.Service.Namespace, w.Service.Name); ev != "" {
			backend = ev
		}
	}
	f := Finding{Cause: CauseWebhookBlocksDelete, Catalog: "A5", Severity: SeverityBlocker, Object: &ref,
		Message:  fmt.Sprintf("webhook %q (failurePolicy %s, operations %v) fails the namespace controller's deletes; backend: %s", w.Name, w.FailurePolicy, w.Operations, backend),
		FixOwner: "webhook owner",
		Remedy:   fmt.Sprintf("restore the webhook's backend; if its owner is being uninstalled, delete the configuration first: kubectl delete %s %s (setting failurePolicy Ignore is an admin decision to audit)", strings.ToLower(w.Kind), w.Config),
		Leaks:    "objects the webhook would have validated are deleted without it"}
	if w.Service != nil && w.Service.Namespace == ns {
		f.Message += "; the webhook's backend lived in this namespace and was deleted with it"
	}
	return f
}
