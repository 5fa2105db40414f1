/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/steps"
)

// DiagnoseWaits runs what one diagnosis pass runs for its due objects: one
// engine session (kube.Cluster) shared by every wait, each diagnosed
// for a target that carries only key. It returns "cause: message" per
// wait; each is called after each wait with how long it took.
func DiagnoseWaits(ctx context.Context, cfg *rest.Config, mapper meta.RESTMapper, pol *policy.Policy, key string, waits []steps.Wait, each func(i int, took time.Duration)) ([]string, error) {
	cluster, err := kube.NewForConfig(cfg, mapper)
	if err != nil {
		return nil, err
	}
	x := &explainer{cluster: cluster, now: time.Now()}
	target := &metav1.ObjectMeta{Name: "target", Namespace: "default", Finalizers: []string{key}}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	var out []string
	for i, w := range waits {
		start := time.Now()
		d, ok := x.diagnose(ctx, pol, key, gvk, target, w, true)
		each(i, time.Since(start))
		if !ok {
			out = append(out, "")
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", d.cause, d.message))
	}
	return out, nil
}
