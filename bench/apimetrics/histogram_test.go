/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package apimetrics

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const webhookExposition = `# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="false",type="admit",le="0.005"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="false",type="admit",le="0.025"} 90
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="false",type="admit",le="0.1"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="false",type="admit",le="+Inf"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="true",type="admit",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="true",type="admit",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="true",type="admit",le="0.1"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="a.example",operation="CREATE",rejected="true",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="b.example",operation="CREATE",rejected="false",type="admit",le="0.005"} 7
apiserver_admission_webhook_admission_duration_seconds_bucket{name="b.example",operation="CREATE",rejected="false",type="admit",le="+Inf"} 7
apiserver_admission_webhook_admission_duration_seconds_sum{name="a.example",operation="CREATE",rejected="false",type="admit"} 1.5
`

func TestBuckets(t *testing.T) {
	got, err := Buckets([]byte(webhookExposition), "apiserver_admission_webhook_admission_duration_seconds", map[string]string{"name": "a.example"})
	if err != nil {
		t.Fatal(err)
	}
	// The rejected and admitted series of one name are added up; b.example
	// is left out.
	want := []Bucket{{0.005, 10}, {0.025, 90}, {0.1, 102}, {math.Inf(1), 102}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Buckets (-want +got):\n%s", diff)
	}
	none, err := Buckets([]byte(webhookExposition), "apiserver_admission_webhook_admission_duration_seconds", map[string]string{"name": "c.example"})
	if err != nil || len(none) != 0 {
		t.Errorf("Buckets of no series = %v, %v; want none", none, err)
	}
}

func TestQuantile(t *testing.T) {
	buckets := []Bucket{{0.005, 10}, {0.025, 90}, {0.1, 100}, {math.Inf(1), 100}}
	for _, tc := range []struct {
		name string
		b    []Bucket
		q    float64
		want float64
	}{
		{"in the first bucket, from 0", buckets, 0.05, 0.0025},
		{"p50 between 5 and 25 ms", buckets, 0.5, 0.005 + 0.020*40/80},
		{"p99 in the third bucket", buckets, 0.99, 0.025 + 0.075*9/10},
		{"a rank in +Inf answers the last finite bound", []Bucket{{0.005, 1}, {math.Inf(1), 10}}, 0.99, 0.005},
		{"empty buckets before the rank are skipped", []Bucket{{0.005, 0}, {0.025, 0}, {0.1, 4}, {math.Inf(1), 4}}, 0.5, 0.025 + 0.075*2/4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(tc.b, tc.q); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Quantile(%g) = %g, want %g", tc.q, got, tc.want)
			}
		})
	}
	if got := Quantile([]Bucket{{0.005, 0}, {math.Inf(1), 0}}, 0.5); !math.IsNaN(got) {
		t.Errorf("Quantile of no observation = %g, want NaN", got)
	}
	after := []Bucket{{0.005, 15}, {math.Inf(1), 30}}
	if diff := cmp.Diff([]Bucket{{0.005, 5}, {math.Inf(1), 20}}, SubBuckets(after, []Bucket{{0.005, 10}, {math.Inf(1), 10}})); diff != "" {
		t.Errorf("SubBuckets (-want +got):\n%s", diff)
	}
}
