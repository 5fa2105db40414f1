/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestSamplesAreAccepted creates every policy in config/samples, reads it
// back, and checks that nothing it says was pruned and that it decodes into
// the Go types without unknown fields.
func TestSamplesAreAccepted(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "teardown.dev_*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want the two samples in config/samples, got %v (%v)", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sample := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(data, &sample.Object); err != nil {
				t.Fatalf("parsing the sample: %v", err)
			}
			if ns := sample.GetNamespace(); ns != "" {
				err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatalf("creating namespace %s: %v", ns, err)
				}
			}
			if err := c.Create(t.Context(), sample.DeepCopy()); err != nil {
				t.Fatalf("the API server refused the sample: %v", err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(sample.GroupVersionKind())
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(sample), got); err != nil {
				t.Fatal(err)
			}
			if missing := notIn(sample.Object["spec"], got.Object["spec"], "spec"); len(missing) > 0 {
				t.Errorf("the API server dropped or changed parts of the sample:\n%s", strings.Join(missing, "\n"))
			}
			var spec teardownv1alpha1.TeardownPolicySpec
			specMap, _ := got.Object["spec"].(map[string]any)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(specMap, &spec, true); err != nil {
				t.Errorf("the stored sample does not fit the Go types: %v", err)
			}
			if len(spec.Steps) == 0 {
				t.Fatal("the sample has no steps")
			}
			for _, s := range spec.Steps {
				if s.OnFailure == "" {
					t.Errorf("step %s: onFailure was not defaulted", s.Name)
				}
				if s.Webhook != nil && s.Webhook.Timeout == nil {
					t.Errorf("step %s: webhook timeout was not defaulted", s.Name)
				}
			}
		})
	}
}

// notIn lists the paths where want has something that got does not have.
func notIn(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, notIn(v, g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d items, got %v", path, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, notIn(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		return nil
	}
}

// TestDefaultsAreApplied creates a policy that leaves every defaulted field
// unset, from the Go types as a controller or a user of the package would,
// and checks the defaults the API server applied.
func TestDefaultsAreApplied(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	pods := []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: &metav1.LabelSelector{}}}
	agents := []teardownv1alpha1.ResourceSelector{{
		APIVersion: "apps/v1", Kind: "DaemonSet",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
	}}
	spec := teardownv1alpha1.TeardownPolicySpec{
		Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Service", Selector: &metav1.LabelSelector{}}},
		Steps: []teardownv1alpha1.Step{
			{Name: "by-url", Webhook: &teardownv1alpha1.WebhookAction{URL: ptr.To("http://cleaner.example.com/")}},
			{Name: "by-service", Webhook: &teardownv1alpha1.WebhookAction{
				Service: &teardownv1alpha1.ServiceReference{Namespace: "shop", Name: "cleaner"},
			}},
			{Name: "delete", Delete: &teardownv1alpha1.DeleteAction{Resources: agents}},
			{Name: "wait", Wait: &teardownv1alpha1.WaitAction{Resources: pods}},
		},
	}
	want := spec.DeepCopy()
	want.Attach = teardownv1alpha1.AttachAutomatic
	want.OnDeadline = teardownv1alpha1.DeadlineBlock
	for i := range want.Steps {
		want.Steps[i].OnFailure = teardownv1alpha1.FailureRetry
	}
	want.Steps[0].Webhook.Timeout = &metav1.Duration{Duration: 10 * time.Second}
	want.Steps[1].Webhook.Timeout = &metav1.Duration{Duration: 10 * time.Second}
	want.Steps[1].Webhook.Service.Port = ptr.To[int32](443)
	want.Steps[2].Delete.PropagationPolicy = metav1.DeletePropagationForeground
	want.Steps[3].Wait.Condition = "size(objects) == 0"
	want.OnPolicyDeletion = teardownv1alpha1.PolicyDeletionFinish

	namespaced := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "default"},
		Spec:       *spec.DeepCopy(),
	}
	cluster := &teardownv1alpha1.ClusterTeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec:       *spec.DeepCopy(),
	}
	for _, obj := range []client.Object{namespaced, cluster} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	gotNamespaced := &teardownv1alpha1.TeardownPolicy{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(namespaced), gotNamespaced); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, &gotNamespaced.Spec); diff != "" {
		t.Errorf("TeardownPolicy defaults (-want +got):\n%s", diff)
	}
	gotCluster := &teardownv1alpha1.ClusterTeardownPolicy{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cluster), gotCluster); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, &gotCluster.Spec); diff != "" {
		t.Errorf("ClusterTeardownPolicy defaults (-want +got):\n%s", diff)
	}
}

// fullSpec sets every field of the spec, so that a round trip through the
// API server shows whether the schema prunes anything the Go types have.
func fullSpec() teardownv1alpha1.TeardownPolicySpec {
	return teardownv1alpha1.TeardownPolicySpec{
		Finalizer: "my.custom/finalizer",
		Attach:    teardownv1alpha1.AttachDeclared,
		Targets: []teardownv1alpha1.Target{{
			APIVersion: "apps/v1", Kind: "Deployment",
			Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"app": "shop"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}},
			},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
		}},
		Deadline:         &metav1.Duration{Duration: 45 * time.Minute},
		OnDeadline:       teardownv1alpha1.DeadlineRelease,
		OnPolicyDeletion: teardownv1alpha1.PolicyDeletionRelease,
		Steps: []teardownv1alpha1.Step{
			{
				Name: "call",
				Webhook: &teardownv1alpha1.WebhookAction{
					Service:          &teardownv1alpha1.ServiceReference{Namespace: "shop", Name: "cleaner", Port: ptr.To[int32](8443), Path: ptr.To("/v1/cleanup")},
					CABundle:         []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
					SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: "cleaner-signing", Key: "hmac"},
					Timeout:          &metav1.Duration{Duration: 30 * time.Second},
				},
				Timeout:   &metav1.Duration{Duration: 2 * time.Minute},
				OnFailure: teardownv1alpha1.FailureContinue,
			},
			{
				Name: "run",
				Job: &teardownv1alpha1.JobAction{
					Namespace: "ops",
					Template: teardownv1alpha1.JobTemplate{
						Metadata: teardownv1alpha1.JobTemplateMetadata{
							Labels:      map[string]string{"app": "drain"},
							Annotations: map[string]string{"example.com/owner": "shop"},
						},
						Spec: batchv1.JobSpec{
							BackoffLimit: ptr.To[int32](2),
							Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
								RestartPolicy: corev1.RestartPolicyNever,
								Containers:    []corev1.Container{{Name: "drain", Image: "example.com/drain:1", Args: []string{"--all"}}},
							}},
						},
					},
				},
				OnFailure: teardownv1alpha1.FailureRelease,
			},
			{
				Name: "delete",
				Delete: &teardownv1alpha1.DeleteAction{
					Resources: []teardownv1alpha1.ResourceSelector{{
						APIVersion: "apps/v1", Kind: "DaemonSet",
						Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
					}},
					PropagationPolicy: metav1.DeletePropagationOrphan,
				},
				OnFailure: teardownv1alpha1.FailureRetry,
			},
			{
				Name: "wait",
				Wait: &teardownv1alpha1.WaitAction{
					Resources: []teardownv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Pod", Selector: &metav1.LabelSelector{}, NamespaceSelector: &metav1.LabelSelector{}}},
					Condition: "objects.all(o, o.metadata.name != 'keep')",
				},
				OnFailure: teardownv1alpha1.FailureRetry,
			},
		},
	}
}

// TestEveryFieldRoundTrips stores a ClusterTeardownPolicy with every spec
// field set and checks it reads back unchanged: the schema keeps everything
// the Go types can say, the Job spec included.
func TestEveryFieldRoundTrips(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	want := fullSpec()
	obj := &teardownv1alpha1.ClusterTeardownPolicy{ObjectMeta: metav1.ObjectMeta{Name: "round-trip"}, Spec: *want.DeepCopy()}
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("the API server refused a full policy: %v", err)
	}
	got := &teardownv1alpha1.ClusterTeardownPolicy{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec after a round trip (-want +got):\n%s", diff)
	}
}

// TestStatusSubresource checks that status is written only through the
// status subresource and that the status the controller will write (counts,
// conditions, blocked objects, recent failures) is stored as sent.
func TestStatusSubresource(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	since := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	ref := teardownv1alpha1.ObjectReference{APIVersion: "v1", Kind: "Service", Namespace: "default", Name: "web"}
	status := teardownv1alpha1.TeardownPolicyStatus{
		ObservedGeneration: 1,
		Conditions: []metav1.Condition{{
			Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 1,
			Reason: teardownv1alpha1.ServingReason, Message: "watching 1 kind", LastTransitionTime: since,
		}},
		Finalizer: "default.teardown.dev/status",
		Guarded:   7, Terminating: 2, Blocked: 1, Released: 40,
		BlockedObjects: []teardownv1alpha1.BlockedObject{{
			Object: ref, Step: "remove-dns", Reason: teardownv1alpha1.StepFailedReason,
			Message: "webhook answered 503", Since: since,
		}},
		RecentFailures: []teardownv1alpha1.StepFailure{{
			Object: ref, Reason: teardownv1alpha1.DeadlineExceededReason,
			Message: "released after 30m; skipped steps: pods-gone", Time: since,
		}},
	}
	obj := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "status", Namespace: "default"},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Service", Selector: &metav1.LabelSelector{}}}},
		Status:     *status.DeepCopy(),
	}
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	got := &teardownv1alpha1.TeardownPolicy{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(teardownv1alpha1.TeardownPolicyStatus{}, got.Status); diff != "" {
		t.Errorf("a create must not set status (-want +got):\n%s", diff)
	}
	got.Status = *status.DeepCopy()
	if err := c.Status().Update(t.Context(), got); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(status, got.Status); diff != "" {
		t.Errorf("status after an update (-want +got):\n%s", diff)
	}
}

// TestDiscoveryAndPrinterColumns checks what kubectl sees: scopes, short
// names, the teardown category and the columns of kubectl get.
func TestDiscoveryAndPrinterColumns(t *testing.T) {
	testenv.SkipShort(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dc.ServerResourcesForGroupVersion(teardownv1alpha1.GroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	type resource struct {
		Kind       string
		Namespaced bool
		ShortNames []string
		Categories []string
	}
	var got []resource
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") {
			got = append(got, resource{r.Kind, r.Namespaced, r.ShortNames, r.Categories})
		}
	}
	slices.SortFunc(got, func(a, b resource) int { return strings.Compare(a.Kind, b.Kind) })
	want := []resource{
		{"ClusterTeardownPolicy", false, []string{"ctdp"}, []string{"teardown"}},
		{"TeardownPolicy", true, []string{"tdp"}, []string{"teardown"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("discovery (-want +got):\n%s", diff)
	}

	// A policy with counts and a Ready condition, as the controller writes it.
	c := newClient(t)
	obj := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "columns", Namespace: "default"},
		Spec:       teardownv1alpha1.TeardownPolicySpec{Attach: teardownv1alpha1.AttachDeclared, Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "Service", Selector: &metav1.LabelSelector{}}}},
	}
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	obj.Status = teardownv1alpha1.TeardownPolicyStatus{
		Finalizer: "default.teardown.dev/columns", Guarded: 3, Terminating: 2, Blocked: 1,
		Conditions: []metav1.Condition{{
			Type: teardownv1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: teardownv1alpha1.UnknownKindReason, Message: "no kind Widget", LastTransitionTime: metav1.Now(),
		}},
	}
	if err := c.Status().Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	table := getTable(t, "/apis/teardown.dev/v1alpha1/namespaces/default/teardownpolicies/columns")
	var columns []string
	for _, col := range table.ColumnDefinitions {
		columns = append(columns, col.Name)
	}
	wantColumns := []string{"Name", "Finalizer", "Attach", "Guarded", "Terminating", "Blocked", "Ready", "Reason", "Age"}
	if diff := cmp.Diff(wantColumns, columns); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("want one row, got %d", len(table.Rows))
	}
	cells := table.Rows[0].Cells[:len(table.Rows[0].Cells)-1] // Age varies
	wantCells := []any{"columns", "default.teardown.dev/columns", "Declared", float64(3), float64(2), float64(1), "False", "UnknownKind"}
	if diff := cmp.Diff(wantCells, cells); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
}

// getTable GETs path as the Table kubectl get renders.
func getTable(t *testing.T, path string) *metav1.Table {
	t.Helper()
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(env.Config.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decoding the table: %v", err)
	}
	return table
}

// TestDocsExamplesAreAccepted creates every complete policy shown in
// docs/api.md (the YAML blocks that start with apiVersion: teardown.dev/...),
// so that the documentation cannot drift from what the API server accepts.
func TestDocsExamplesAreAccepted(t *testing.T) {
	testenv.SkipShort(t)
	c := newClient(t)
	data, err := os.ReadFile(filepath.Join(root, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	for _, block := range strings.Split(string(data), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if strings.HasPrefix(block, "apiVersion: teardown.dev/") {
			examples = append(examples, block)
		}
	}
	if len(examples) == 0 {
		t.Fatal("no complete policy found in docs/api.md")
	}
	for i, example := range examples {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(example), &obj.Object); err != nil {
			t.Fatalf("example %d does not parse: %v\n%s", i, err, example)
		}
		if ns := obj.GetNamespace(); ns != "" {
			if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
		obj.SetName(fmt.Sprintf("docs-example-%d", i))
		if err := c.Create(t.Context(), obj); err != nil {
			t.Errorf("the API server refused example %d of docs/api.md: %v\n%s", i, err, example)
		}
	}
}
