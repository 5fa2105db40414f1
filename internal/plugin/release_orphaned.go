/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/diagnose"
)

// errNoLongerCertain: between the listing and the release of one
// finalizer, explain's finding changed; that finalizer is skipped.
var errNoLongerCertain = errors.New("no longer certain")

// runOrphaned is release --orphaned: the safe bulk release of a namespace.
// It lists the objects being deleted there as status does, keeps the
// finalizers whose root finding is OrphanFinalizer (no catalog entry, no
// Teardown policy, no CRD or APIService of its domain: nothing will ever
// remove it, and nothing known leaks), and releases each one as a single
// release does: explain again, the evidence shown, the server-side dry-run
// of the exact write, and the audit record, applied only with --yes (or a
// confirmation per finalizer on a terminal), and only while explain still
// finds it orphaned. Findings explain is less sure of are listed, never
// released.
func (o *ReleaseOptions) runOrphaned(ctx context.Context) error {
	if o.cluster.namespace == "" {
		return usageErrorf("--%s works on one namespace: give -n", flagOrphaned)
	}
	st := &StatusOptions{IOStreams: o.IOStreams, clusterOptions: o.clusterOptions, Now: o.Now, Workers: 16, namespace: o.cluster.namespace}
	rep, err := st.collect(ctx)
	if err != nil {
		return err
	}
	type release struct {
		row StatusRow
		fin string
	}
	var todo []release
	others := 0
	for _, row := range rep.Items {
		for _, f := range row.RootBlockers {
			if f.Cause == diagnose.CauseOrphanFinalizer && f.Finalizer != "" && f.Object != nil &&
				f.Object.Kind == row.Object.Kind && f.Object.Namespace == row.Object.Namespace && f.Object.Name == row.Object.Name {
				todo = append(todo, release{row, f.Finalizer})
			} else {
				others++
			}
		}
	}
	fmt.Fprintf(o.Out, "%d finalizer(s) owned by nothing on the objects being deleted in namespace %s; %d other blocker(s) left alone (kubectl teardown status -n %s).\n",
		len(todo), o.cluster.namespace, others, o.cluster.namespace)
	released, skipped := 0, 0
	for _, r := range todo {
		one := *o
		one.Orphaned, one.Finalizer, one.requireCause = false, r.fin, diagnose.CauseOrphanFinalizer
		// TYPE as kubectl takes it: resource.group, which resolve maps back.
		one.typ, one.name = r.row.Object.Resource, r.row.Object.Name
		if gv, err := schema.ParseGroupVersion(r.row.Object.APIVersion); err == nil && gv.Group != "" {
			one.typ += "." + gv.Group
		}
		fmt.Fprintf(o.Out, "\n--- %s\n", diagnose.TargetArg(r.row.Object))
		if err := one.Run(ctx); err != nil {
			skipped++
			fmt.Fprintf(o.ErrOut, "%s: %q not released: %v\n", diagnose.TargetArg(r.row.Object), r.fin, err)
			continue
		}
		if o.Yes {
			released++
		}
	}
	switch {
	case o.Yes:
		fmt.Fprintf(o.Out, "\nReleased %d of %d; %d not released (said above).\n", released, len(todo), skipped)
	default:
		fmt.Fprintf(o.Out, "\nDry-run: nothing changed (%d not releasable, said above). To apply, run this again with --yes.\n", skipped)
	}
	if skipped > 0 {
		return fmt.Errorf("%d of %d orphaned finalizer(s) not released", skipped, len(todo))
	}
	return nil
}
