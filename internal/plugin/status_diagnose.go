/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// diagnosis is one Terminating object of a listing for the engine to
// explain.
type diagnosis struct {
	// row is its index in the report's items.
	row    int
	target diagnose.Target
	obj    metav1.Object
	// keep is true when status's own line stands: it already names a
	// stopped kube-controller-manager, more briefly than the engine.
	keep bool
}

// engine is the diagnosis engine's access for one listing: fresh caches
// (a --watch refresh reads the cluster again), given the listing's own
// metadata lists so that it does not list the same kinds again. Lists
// filtered by -l are not every object of their kinds, so they are not
// handed over.
func (o *StatusOptions) engine(items []kube.MetaItem, errs []error) *kube.Cluster {
	c := o.cluster.read.Fresh().Bulk()
	if o.Selector != "" {
		return c
	}
	c.SeedScope(o.namespace, items, errs)
	if o.namespace == "" {
		byNamespace := map[string][]kube.MetaItem{}
		for _, it := range items {
			if it.Obj.Namespace != "" {
				byNamespace[it.Obj.Namespace] = append(byNamespace[it.Obj.Namespace], it)
			}
		}
		for ns, in := range byNamespace {
			c.SeedScope(ns, in, errs)
		}
	}
	return c
}

// diagnose runs the engine on every Terminating object, o.Workers at a
// time on one shared Cluster (one list per kind, not one per object), and
// puts its root blocker, or what the object waits on and whether that is
// alive, in the row. It leaves out the removal dry-runs (one request per
// finalizer): explain makes them. A failed explanation leaves the row's
// line from metadata.
func (o *StatusOptions) diagnose(ctx context.Context, c *kube.Cluster, now time.Time, rep *StatusReport, jobs []diagnosis) {
	work := make(chan diagnosis)
	var wg sync.WaitGroup
	workers := max(o.Workers, 1)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				r, err := diagnose.NewExplainer(c, now).WithoutRemovalDryRun().ExplainObject(ctx, j.target, j.obj)
				if err != nil {
					continue
				}
				row := &rep.Items[j.row]
				row.Blocked = r.Blocked
				row.Stalled = r.Verdict == diagnose.VerdictStalled
				row.RootBlockers = r.RootBlockers
				if len(r.RootBlockers) > 0 {
					row.Cause = r.RootBlockers[0].Cause
				} else if row.Stalled {
					row.Cause = diagnose.CauseStalled
				}
				if line := diagnose.Summary(r); line != "" && !j.keep {
					row.Blocker = line
				}
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	rep.Blocked, rep.Stalled = 0, 0
	for _, it := range rep.Items {
		if it.Blocked {
			rep.Blocked++
		}
		if it.Stalled {
			rep.Stalled++
		}
	}
}

// blockedExit is ExitBlocked when --exit-blocked is set and the engine
// found a blocker, or an object that is stalled (no blocker, no evidence of
// progress).
func (o *StatusOptions) blockedExit(rep *StatusReport) error {
	if o.ExitBlocked && rep.Blocked+rep.Stalled > 0 {
		return errBlocked
	}
	return nil
}
