/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestArtifactHubAnnotations: what Chart.yaml tells Artifact Hub is the
// chart's own truth: the CRDs are the ones config/crd defines, the examples
// are config/samples' policies as written, and the image is the values'
// repository at the chart's appVersion.
func TestArtifactHubAnnotations(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "charts", "teardown", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chartYAML struct {
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &chartYAML); err != nil {
		t.Fatal(err)
	}
	annotation := func(key string, into any) {
		t.Helper()
		v, ok := chartYAML.Annotations["artifacthub.io/"+key]
		if !ok {
			t.Fatalf("Chart.yaml has no artifacthub.io/%s", key)
		}
		if err := yaml.Unmarshal([]byte(v), into); err != nil {
			t.Fatalf("artifacthub.io/%s: %v", key, err)
		}
	}

	var crds []struct{ Kind, Version, Name string }
	annotation("crds", &crds)
	var defined []string
	for _, obj := range readConfig(t, "config/crd/bases/teardown.dev_teardownpolicies.yaml") {
		defined = append(defined, fmt.Sprint(get(obj, "metadata", "name")))
	}
	for _, obj := range readConfig(t, "config/crd/bases/teardown.dev_clusterteardownpolicies.yaml") {
		defined = append(defined, fmt.Sprint(get(obj, "metadata", "name")))
	}
	var named []string
	for _, c := range crds {
		named = append(named, c.Name)
		if c.Version != "v1alpha1" {
			t.Errorf("artifacthub.io/crds: %s version %s, want v1alpha1", c.Kind, c.Version)
		}
	}
	slices.Sort(defined)
	slices.Sort(named)
	if !slices.Equal(defined, named) {
		t.Errorf("artifacthub.io/crds names %v, config/crd defines %v", named, defined)
	}

	var examples []map[string]any
	annotation("crdsExamples", &examples)
	var samples []map[string]any
	for _, f := range []string{"teardown.dev_v1alpha1_teardownpolicy.yaml", "teardown.dev_v1alpha1_clusterteardownpolicy.yaml"} {
		samples = append(samples, readConfig(t, "config/samples/"+f)...)
	}
	if !reflect.DeepEqual(examples, samples) {
		t.Errorf("artifacthub.io/crdsExamples differ from config/samples' policies: copy them again")
	}

	var images []struct{ Name, Image string }
	annotation("images", &images)
	values := map[string]any{}
	vdata, err := os.ReadFile(filepath.Join(root, "charts", "teardown", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(vdata, &values); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%v:%s", get(values, "image", "repository"), chartYAML.AppVersion)
	if len(images) != 1 || images[0].Image != want {
		t.Errorf("artifacthub.io/images is %v, want one image %s", images, want)
	}
	for _, key := range []string{"links", "changes", "license"} {
		if chartYAML.Annotations["artifacthub.io/"+key] == "" {
			t.Errorf("Chart.yaml has no artifacthub.io/%s", key)
		}
	}
}
