/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// volumes are three ConfigMaps as a wait step sees them.
func volumes() []any {
	cm := func(name, size, endpoint, cidr, version string) any {
		return map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app": "shop", "tier": "data"}},
			"data":     map[string]any{"size": size, "endpoint": endpoint, "cidr": cidr, "version": version},
		}
	}
	return []any{
		cm("vol-a", "512Mi", "https://storage.example.com:8443/v1", "10.0.0.0/16", "1.2.3"),
		cm("vol-b", "2Gi", "https://storage.example.com/v1", "10.1.0.0/16", "1.10.0"),
		cm("vol-c", "100m", "http://10.0.0.7/v1", "fd00::/64", "2.0.0"),
	}
}

// TestKubernetesCELFunctions: a wait condition has the functions of the
// Kubernetes CEL base environment, as ValidatingAdmissionPolicy has them.
// The bare cel-go environment of before compiled none of these.
func TestKubernetesCELFunctions(t *testing.T) {
	for _, tc := range []struct {
		library, expr string
		want          bool
	}{
		{"quantity", "objects.all(o, quantity(o.data.size).isLessThan(quantity('3Gi')))", true},
		{"quantity", "objects.exists(o, quantity(o.data.size).compareTo(quantity('1Gi')) > 0)", true},
		{"quantity", "objects.map(o, quantity(o.data.size).asApproximateFloat()).sum() > 2.0 * 1024.0 * 1024.0 * 1024.0", true},
		{"quantity", "objects.all(o, isQuantity(o.data.size))", true},
		{"url", "objects.all(o, url(o.data.endpoint).getHostname() in ['storage.example.com', '10.0.0.7'])", true},
		{"url", "objects.all(o, url(o.data.endpoint).getScheme() == 'https')", false},
		{"url", "objects.exists(o, url(o.data.endpoint).getPort() == '8443')", true},
		{"regex", "objects.all(o, o.metadata.name.matches('^vol-[a-z]$'))", true},
		{"regex", "objects.map(o, o.metadata.name.find('[a-z]$')) == ['a', 'b', 'c']", true},
		{"regex", "objects[0].data.endpoint.findAll('[0-9]+') == ['8443', '1']", true},
		{"lists", "objects.map(o, o.metadata.name).isSorted()", true},
		{"lists", "objects.map(o, o.metadata.name).indexOf('vol-b') == 1", true},
		{"lists", "objects.map(o, [o.metadata.labels.tier, o.metadata.labels.app]).flatten().distinct() == ['data', 'shop']", true},
		{"sets", "sets.contains(objects.map(o, o.metadata.name), ['vol-a', 'vol-c'])", true},
		{"strings", "objects.all(o, o.metadata.name.upperAscii().startsWith('VOL-'))", true},
		{"strings", "objects.map(o, o.metadata.name.split('-')[1]).join(',') == 'a,b,c'", true},
		{"ip/cidr", "objects.exists(o, cidr(o.data.cidr).containsIP(ip('10.0.255.1')))", true},
		{"ip/cidr", "objects.filter(o, isCIDR(o.data.cidr) && cidr(o.data.cidr).ip().family() == 6).size() == 1", true},
		{"ip/cidr", "ip(url(objects[2].data.endpoint).getHostname()).isGlobalUnicast()", true},
		{"format", "objects.all(o, !format.dns1123Label().validate(o.metadata.name).hasValue())", true},
		{"format", "format.named('dns1123Subdomain').value().validate('Not_A_Name').hasValue()", true},
		{"semver", "objects.all(o, semver(o.data.version).isGreaterThan(semver('1.0.0')))", true},
		{"semver", "semver(objects[1].data.version).compareTo(semver(objects[0].data.version)) > 0", true},
		{"optional", "objects[0].data.?missing.orValue('none') == 'none'", true},
		{"two-variable comprehension", "objects.all(i, o, o.metadata.name.endsWith(['a', 'b', 'c'][i]))", true},
	} {
		t.Run(tc.library+": "+tc.expr, func(t *testing.T) {
			prg, err := CompileCondition(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			val, _, err := prg.ContextEval(t.Context(), map[string]any{"objects": volumes()})
			if err != nil {
				t.Fatal(err)
			}
			if val.Value() != tc.want {
				t.Errorf("= %v, want %v", val.Value(), tc.want)
			}
		})
	}
}

// TestConditionEstimatedCostRefused: a condition whose estimated worst case
// is over maxEstimatedConditionCost is refused when compiled, with a message
// that says so; the same kinds of condition one loop shallower compile
// (the negative controls).
func TestConditionEstimatedCostRefused(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		refused bool
	}{
		{expr: "size(objects) == 0"},
		{expr: "objects.all(o, o.status.phase == 'Released')"},
		{expr: "objects.all(o, o.metadata.name.matches('^vol-'))"},
		{expr: "objects.all(o, o.metadata.labels.all(k, k.startsWith('app')))"},
		{expr: "objects.all(a, objects.exists(b, a.metadata.name == b.metadata.name))", refused: true},
		{expr: "objects.all(o, o.metadata.labels.all(k, o.metadata.annotations.exists(a, a == k)))", refused: true},
		{expr: "objects.all(o, o.metadata.labels.all(k, k.matches('^a') && k.matches('b$') && k.matches('c')))", refused: true},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := CompileCondition(tc.expr)
			switch {
			case !tc.refused && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused && err == nil:
				t.Fatal("compiled, want it refused as too costly")
			case tc.refused:
				want := fmt.Sprintf("condition %q is too costly: its estimated cost is up to ", tc.expr)
				tail := "over the limit of 10000000 (for up to 1000 objects, with strings, lists and maps of up to 1024 in them)"
				if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), tail) {
					t.Errorf("error = %q, want %q ... %q", err, want, tail)
				}
			}
		})
	}
}

// TestConditionRuntimeCostLimit: a condition that passes the estimate but
// meets far bigger data than it assumes (200 objects with 100 KiB of data
// each) stops at the per-evaluation limit, an error the wait step reports as
// "evaluation cancelled or over its cost limit" (transient); over small
// objects the same condition evaluates (the negative control).
func TestConditionRuntimeCostLimit(t *testing.T) {
	prg, err := CompileCondition("objects.all(o, !o.data.blob.contains('needle') && quantity(o.data.size).isLessThan(quantity('3Gi')))")
	if err != nil {
		t.Fatal(err)
	}
	withBlob := func(n, size int) []any {
		blob := strings.Repeat("x", size)
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"data": map[string]any{"size": "1Gi", "blob": blob}}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		objects []any
		wantErr string
	}{
		{name: "200 objects of 1 KiB", objects: withBlob(200, 1<<10)},
		{name: "200 objects of 100 KiB", objects: withBlob(200, 100<<10), wantErr: "operation cancelled: actual cost limit exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			val, details, err := prg.ContextEval(context.Background(), map[string]any{"objects": tc.objects})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if err == nil && val.Value() != true {
				t.Errorf("= %v, want true", val.Value())
			}
			if cost := details.ActualCost(); cost == nil || *cost > maxConditionCost+100<<10 {
				t.Errorf("actual cost %v, want at most about %d", cost, maxConditionCost)
			}
		})
	}
}

// TestConditionsStillCompile: what the docs and earlier policies write
// compiles as before in the Kubernetes environment.
func TestConditionsStillCompile(t *testing.T) {
	for _, expr := range []string{
		"size(objects) == 0",
		"objects.all(o, o.status.phase == 'Released')",
		"objects.all(o, has(o.status.succeeded) && o.status.succeeded > 0)",
		"!objects.exists(o, o.metadata.name.startsWith('tmp-'))",
		"objects.filter(o, o.kind == 'Pod').size() < 3",
	} {
		if _, err := CompileCondition(expr); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}
