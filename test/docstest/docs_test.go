/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package docstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/controller/diagnosis"
	"github.com/teardown-dev/teardown/internal/controller/teardownpolicy"
	"github.com/teardown-dev/teardown/internal/demo"
	"github.com/teardown-dev/teardown/internal/steps"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

var (
	root string
	k8s  client.Client
)

func TestMain(m *testing.M) {
	var err error
	if root, err = testenv.ModuleRoot(); err != nil {
		panic(err)
	}
	opts := testenv.Options{CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")}}
	testenv.Main(m, opts, func(e *testenv.Env) {
		scheme, err := controller.NewScheme()
		if err != nil {
			panic(err)
		}
		if k8s, err = client.New(e.Config, client.Options{Scheme: scheme}); err != nil {
			panic(err)
		}
		mgr, err := controller.NewManager(e.Config, controller.ManagerOptions{Controller: controller.DefaultOptions()})
		if err != nil {
			panic(err)
		}
		e.StartManager(mgr)
	})
}

// blocks returns the bodies of the fenced code blocks of a language in a
// Markdown file.
func blocks(t *testing.T, file, lang string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(data), "```"+lang+"\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		out = append(out, block)
	}
	return out
}

// TestYAMLExamples creates every object in the YAML blocks of
// docs/controller.md and of the README on the API server, and waits for
// every policy among them to be Ready. A block that is a status excerpt
// must decode into the status type without unknown fields.
func TestYAMLExamples(t *testing.T) {
	testenv.SkipShort(t)
	var policies []*unstructured.Unstructured
	for _, file := range []string{"docs/controller.md", "README.md"} {
		yamls := blocks(t, file, "yaml")
		if len(yamls) == 0 {
			t.Fatalf("%s has no YAML example", file)
		}
		for i, block := range yamls {
			for j, doc := range strings.Split(block, "\n---\n") {
				where := fmt.Sprintf("%s, YAML block %d, document %d", file, i+1, j+1)
				if strings.HasPrefix(doc, "status:") {
					var s struct {
						Status teardownv1alpha1.TeardownPolicyStatus `json:"status"`
					}
					if err := yaml.UnmarshalStrict([]byte(doc), &s); err != nil {
						t.Errorf("%s does not fit the status type: %v", where, err)
					}
					continue
				}
				obj := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
					t.Fatalf("%s does not parse: %v\n%s", where, err, doc)
				}
				if obj.GetAPIVersion() == "" || obj.GetKind() == "" {
					t.Errorf("%s is neither an object nor a status excerpt:\n%s", where, doc)
					continue
				}
				// The namespaces an example lives in or runs its Jobs in exist,
				// as they would in a reader's cluster.
				jobNamespaces, _, _ := unstructured.NestedSlice(obj.Object, "spec", "steps")
				for _, ns := range append([]string{obj.GetNamespace()}, namespacesOfJobs(jobNamespaces)...) {
					if ns == "" {
						continue
					}
					err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						t.Fatal(err)
					}
					// As the docs say: a TeardownPolicy acts as a ServiceAccount
					// of its namespace, which its owner grants what it needs.
					if err := testenv.GrantServiceAccount(t.Context(), k8s, ns, "default", "edit"); err != nil {
						t.Fatal(err)
					}
				}
				if err := k8s.Create(t.Context(), obj); err != nil {
					t.Errorf("the API server refused %s: %v\n%s", where, err, doc)
					continue
				}
				if obj.GroupVersionKind().Group == teardownv1alpha1.GroupVersion.Group {
					checkFitsTypes(t, where, obj)
					policies = append(policies, obj)
				}
			}
		}
	}
	for _, pol := range policies {
		ready(t, pol)
	}
}

// namespacesOfJobs returns the job.namespace of each step.
func namespacesOfJobs(steps []any) []string {
	var out []string
	for _, s := range steps {
		step, _ := s.(map[string]any)
		if ns, ok, _ := unstructured.NestedString(step, "job", "namespace"); ok {
			out = append(out, ns)
		}
	}
	return out
}

// checkFitsTypes fails if the stored policy has fields the Go types lack.
func checkFitsTypes(t *testing.T, where string, obj *unstructured.Unstructured) {
	t.Helper()
	spec, _ := obj.Object["spec"].(map[string]any)
	var typed teardownv1alpha1.TeardownPolicySpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(spec, &typed, true); err != nil {
		t.Errorf("%s does not fit the Go types: %v", where, err)
	}
}

// ready waits for the controller's verdict on a policy and fails unless it
// is Ready=True.
func ready(t *testing.T, pol *unstructured.Unstructured) {
	t.Helper()
	var cond *metav1.Condition
	testenv.Eventually(t, 30*time.Second, "the Ready condition of "+pol.GetKind()+" "+pol.GetName(), func(ctx context.Context) (bool, error) {
		var status teardownv1alpha1.TeardownPolicyStatus
		var generation int64
		key := client.ObjectKeyFromObject(pol)
		if pol.GetKind() == "ClusterTeardownPolicy" {
			p := &teardownv1alpha1.ClusterTeardownPolicy{}
			if err := k8s.Get(ctx, key, p); err != nil {
				return false, err
			}
			status, generation = p.Status, p.Generation
		} else {
			p := &teardownv1alpha1.TeardownPolicy{}
			if err := k8s.Get(ctx, key, p); err != nil {
				return false, err
			}
			status, generation = p.Status, p.Generation
		}
		cond = meta.FindStatusCondition(status.Conditions, teardownv1alpha1.ReadyCondition)
		return cond != nil && cond.ObservedGeneration == generation, nil
	})
	if cond.Status != metav1.ConditionTrue {
		t.Errorf("%s %s/%s is not Ready: %s: %s", pol.GetKind(), pol.GetNamespace(), pol.GetName(), cond.Reason, cond.Message)
	}
}

// TestWebhookContractExamples decodes the JSON examples of the webhook
// contract into the types the controller sends and reads.
func TestWebhookContractExamples(t *testing.T) {
	examples := blocks(t, "docs/controller.md", "json")
	var requests, responses int
	for i, ex := range examples {
		dec := json.NewDecoder(bytes.NewReader([]byte(ex)))
		dec.DisallowUnknownFields()
		if strings.Contains(ex, `"CleanupRequest"`) {
			var req steps.WebhookRequest
			if err := dec.Decode(&req); err != nil {
				t.Errorf("JSON block %d is not a steps.WebhookRequest: %v", i+1, err)
				continue
			}
			if req.APIVersion != teardownv1alpha1.GroupVersion.String() || req.Object.UID == "" || req.Finalizer == "" {
				t.Errorf("JSON block %d: request %+v lacks what the controller always sends", i+1, req)
			}
			requests++
			continue
		}
		var resp steps.WebhookResponse
		if err := dec.Decode(&resp); err != nil {
			t.Errorf("JSON block %d is not a steps.WebhookResponse: %v", i+1, err)
			continue
		}
		if !slices.Contains([]string{steps.WebhookSuccess, steps.WebhookInProgress, steps.WebhookFailure}, resp.Status) {
			t.Errorf("JSON block %d: status %q is not one the controller knows", i+1, resp.Status)
		}
		responses++
	}
	if requests == 0 || responses == 0 {
		t.Errorf("docs/controller.md shows %d request(s) and %d response(s); want both", requests, responses)
	}
}

// TestContractNamesAreDocumented: what a Job, a webhook, an alert or a
// person relies on must be named in docs/controller.md.
func TestContractNamesAreDocumented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "docs", "controller.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	names := []string{
		steps.EnvTargetAPIVersion, steps.EnvTargetKind, steps.EnvTargetNamespace, steps.EnvTargetName,
		steps.EnvTargetUID, steps.EnvPolicy,
		steps.LabelPolicy, steps.LabelTargetUID, steps.LabelStep, steps.StateAnnotationPrefix,
		steps.WebhookSuccess, steps.WebhookInProgress, steps.WebhookFailure,
		teardownv1alpha1.PolicyFinalizer, teardownpolicy.ReasonReleasedGuardedObjects,
		finalizer.ProgressAnnotationPrefix,
		finalizer.ReasonCleanupPending, finalizer.ReasonCleanupFailed, finalizer.ReasonDeadlineExceeded,
		finalizer.ReasonFinalizerReleased, finalizer.ReasonDeletedBeforeGuarded,
		controller.Name, "teardown.dev/aggregate-to-controller", "teardown-controller-targets",
		"--" + "attach-webhook-configuration",
		"--" + "default-service-account", "--" + steps.AllowedCIDRsFlag, "--" + steps.AllowHTTPFlag,
		"--" + "cluster-resource-namespace", steps.SignatureHeader, "teardown-policy-service-account", //nolint:staticcheck // the docs name the legacy header while it is sent
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range slices.Concat(finalizer.Collectors(), teardownpolicy.Collectors(), diagnosis.Collectors()) {
		descs := make(chan *prometheus.Desc, 16)
		c.Describe(descs)
		close(descs)
		for d := range descs {
			if m := fqName.FindStringSubmatch(d.String()); m != nil {
				names = append(names, m[1])
			}
		}
	}
	for _, n := range names {
		if !strings.Contains(doc, n) {
			t.Errorf("docs/controller.md does not mention %q", n)
		}
	}
}

// TestReadmePolicyIsTheDemos: the README's policy is the one `make demo`
// runs (and internal/demo's test proves), so what the README says happens
// is what happens.
func TestReadmePolicyIsTheDemos(t *testing.T) {
	for _, block := range blocks(t, "README.md", "yaml") {
		if block == demo.AgentPolicy {
			return
		}
	}
	t.Errorf("README.md has no YAML block equal to demo.AgentPolicy:\n%s", demo.AgentPolicy)
}
