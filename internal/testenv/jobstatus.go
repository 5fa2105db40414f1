/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package testenv

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// JobSucceededConditions are the conditions the Job controller of this
// control plane's Kubernetes sets on a Job that succeeded, for tests that
// play the Job controller (no kubelet runs here). Since 1.31 the API server
// refuses Complete without SuccessCriteriaMet beside it; 1.30's refuses
// SuccessCriteriaMet on a Job without a successPolicy (make test-compat runs
// both). The controller reads only Complete and Failed (internal/steps/job.go).
func (e *Env) JobSucceededConditions(now metav1.Time) ([]batchv1.JobCondition, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(e.Config)
	if err != nil {
		return nil, fmt.Errorf("a discovery client: %w", err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the server's version: %w", err)
	}
	// Minor is "30", or "30+" from some builds.
	minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err != nil {
		return nil, fmt.Errorf("the server's minor version %q: %w", v.Minor, err)
	}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now}
	if v.Major == "1" && minor < 31 {
		return []batchv1.JobCondition{complete}, nil
	}
	return []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		complete,
	}, nil
}
