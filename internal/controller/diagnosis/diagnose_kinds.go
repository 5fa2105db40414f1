/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnosis

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/teardown-dev/teardown/internal/policy"
)

// ParseDiagnoseKinds reads --diagnose-kinds: resources as kubectl names
// them, plural and lower case, with their group after a dot for other
// groups than the core one ("namespaces,persistentvolumeclaims,
// deployments.apps").
func ParseDiagnoseKinds(s string) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		gr := schema.ParseGroupResource(part)
		if gr.Resource == "" || strings.ContainsAny(part, "/ ") {
			return nil, fmt.Errorf("--diagnose-kinds: %q is not a resource such as namespaces or deployments.apps", part)
		}
		out = append(out, gr)
	}
	return out, nil
}

// kindCandidate is a terminating object of a --diagnose-kinds kind.
type kindCandidate struct {
	gvk schema.GroupVersionKind
	obj *metav1.PartialObjectMetadata
}

// terminatingOfKinds lists the objects of x.Kinds terminating longer than
// After and due, leaving out those a policy guards (diagnosed with their
// step). One paged metadata-only list per kind, through the session's
// clients. seen collects every terminating one, due or not.
func (x *Diagnoser) terminatingOfKinds(ctx context.Context, ex *explainer, guarded map[types.UID]bool, seen map[diagKey]bool, now time.Time) []kindCandidate {
	log := logf.FromContext(ctx)
	var out []kindCandidate
	for _, gr := range x.Kinds {
		gvr, err := x.Mapper.ResourceFor(gr.WithVersion(""))
		if err != nil {
			log.V(1).Info("Cannot diagnose a kind of --diagnose-kinds", "resource", gr.String(), "err", err.Error())
			continue
		}
		gvk, err := x.Mapper.KindFor(gvr)
		if err != nil {
			continue
		}
		// One paged metadata list per kind and pass, through the session.
		items, err := ex.cluster.MetaOf(ctx, gvr)
		for i := range items {
			obj := &items[i]
			if obj.DeletionTimestamp == nil || guarded[obj.UID] {
				continue
			}
			dk := diagKey{"", obj.UID}
			seen[dk] = true
			if now.Sub(obj.DeletionTimestamp.Time) < x.After || !x.dueIn(dk, now, x.Every/2) {
				continue
			}
			obj = obj.DeepCopy()
			obj.SetGroupVersionKind(gvk)
			out = append(out, kindCandidate{gvk: gvk, obj: obj})
		}
		if err != nil {
			log.Info("Cannot list a kind of --diagnose-kinds; grant the controller list on it (config/rbac/diagnose_role.yaml)", "resource", gr.String(), "err", err.Error())
		}
	}
	return out
}

// diagnoseKinds explains each terminating object of a --diagnose-kinds
// kind itself, with the pass's session: its first root blocker, an Event
// when it changes, and a series of teardown_blocked_objects with policy "".
func (x *Diagnoser) diagnoseKinds(ctx context.Context, ex *explainer, due []kindCandidate, now time.Time) {
	for _, c := range due {
		if ctx.Err() != nil {
			return
		}
		var d diagnosis
		ok := false
		if roots := ex.explainObject(ctx, c.gvk, c.obj.Namespace, c.obj.Name, ""); len(roots) > 0 {
			d, ok = roots[0], true
			if n := len(roots) - 1; n > 0 {
				d.message += fmt.Sprintf(" (+%d more)", n)
			}
		}
		x.record(ctx, diagKey{"", c.obj.UID}, policy.Ref{}, c.obj, d, ok, "", now)
	}
}
