/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apimetrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const exposition = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PATCH",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="",resource="configmaps",scope="resource",subresource="",verb="PATCH",version="v1"} 2
apiserver_request_total{code="422",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PATCH",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="teardown.dev",resource="teardownpolicies",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="0",component="",dry_run="",group="",resource="",scope="",subresource="",verb="WATCH",version=""} 1
etcd_requests_total{group="",operation="get",resource="configmaps"} 5
etcd_requests_total{group="",operation="update",resource="configmaps"} 9
etcd_requests_total{group="",operation="get",resource="secrets"} 1
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",le="0.005"} 99
`

func TestParseAndSub(t *testing.T) {
	before, err := Parse([]byte(exposition))
	if err != nil {
		t.Fatal(err)
	}
	if got := before.Requests("", "configmaps", "PATCH"); got != 13 {
		t.Errorf("PATCH configmaps = %g, want 13 (dry runs are added in)", got)
	}
	if diff := cmp.Diff(map[string]float64{"get": 5, "update": 9}, before.Etcd("", "configmaps")); diff != "" {
		t.Errorf("Etcd (-want +got):\n%s", diff)
	}
	if got := before.Conflicts("", "configmaps", "PATCH"); got != 1 {
		t.Errorf("conflicting PATCHes = %g, want 1", got)
	}
	after := Snapshot{}
	for k, v := range before {
		after[k] = v
	}
	after[Key{Verb: "PATCH", Resource: "configmaps", Code: "200"}] += 5
	after[Key{Verb: "PUT", Resource: "configmaps", Code: "409"}] = 2
	d := after.Sub(before)
	want := Snapshot{
		{Verb: "PATCH", Resource: "configmaps", Code: "200"}: 5,
		{Verb: "PUT", Resource: "configmaps", Code: "409"}:   2,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Sub (-want +got):\n%s", diff)
	}
	if got := d.Conflicts("", "configmaps", "PUT"); got != 2 {
		t.Errorf("conflicting PUTs = %g, want 2", got)
	}
	wantWrites := map[string]float64{
		"PATCH configmaps": 13, "POST events.k8s.io/events": 3, "PATCH teardown.dev/teardownpolicies/status": 4,
	}
	if diff := cmp.Diff(wantWrites, before.Writes()); diff != "" {
		t.Errorf("Writes (-want +got):\n%s", diff)
	}
}

func TestParseSeries(t *testing.T) {
	labels, v, err := parseSeries(`a="x\"y",b="",c="z"} 1.5e+03`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": `x"y`, "b": "", "c": "z"}, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if v != 1500 {
		t.Errorf("value = %g, want 1500", v)
	}
	for _, bad := range []string{`a=x} 1`, `a="x} 1`, `a="x"}`, `a="x"} one`} {
		if _, _, err := parseSeries(bad); err == nil {
			t.Errorf("parseSeries(%q) succeeded, want an error", bad)
		}
	}
}

func TestSum(t *testing.T) {
	data := []byte(`# TYPE workqueue_depth gauge
workqueue_depth{controller="target",name="target"} 3
workqueue_depth{controller="teardownpolicy",name="teardownpolicy"} 1
workqueue_adds_total{controller="target",name="target"} 1200
process_cpu_seconds_total 4.5
`)
	for _, tc := range []struct {
		metric string
		match  map[string]string
		want   float64
		found  bool
	}{
		{"workqueue_depth", map[string]string{"name": "target"}, 3, true},
		{"workqueue_depth", nil, 4, true},
		{"workqueue_adds_total", map[string]string{"name": "target"}, 1200, true},
		{"workqueue_adds_total", map[string]string{"name": "configmap"}, 0, false},
		{"process_cpu_seconds_total", nil, 4.5, true},
		{"workqueue", nil, 0, false},
	} {
		got, found, err := Sum(data, tc.metric, tc.match)
		if err != nil || got != tc.want || found != tc.found {
			t.Errorf("Sum(%s, %v) = %v, %v, %v; want %v, %v", tc.metric, tc.match, got, found, err, tc.want, tc.found)
		}
	}
}
