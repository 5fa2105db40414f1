/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package report

import (
	"fmt"
	"slices"
)

// Target is one target of the benchmark issue, checked on one run.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Pass bool   `json:"pass"`
}

// The targets' thresholds.
const (
	MinVsRaw             = 0.8
	MinVsBaselineDefault = 2.0
	MinVsBaselineTuned   = 1.0
	MaxAttachWrites      = 1.0
	MaxRemoveWrites      = 1.0
	MaxConflictShare     = 0.01
	MaxRSSPerObject      = 2048.0
	MinRSSVsBaseline     = 3.0
)

// Evaluate checks the targets on everything that r measured; a target whose
// runs are missing is not listed.
func Evaluate(r *Results) []Target {
	var out []Target
	ns := []int{}
	for _, run := range r.Runs {
		if !slices.Contains(ns, run.N) {
			ns = append(ns, run.N)
		}
	}
	slices.Sort(ns)
	for _, n := range ns {
		raw, hasRaw := r.Find(Raw, n)
		bd, hasBD := r.Find(BaselineDefault, n)
		bt, hasBT := r.Find(BaselineTuned, n)
		for _, sc := range []string{Teardown, TeardownWebhook, TeardownDeclared} {
			td, ok := r.Find(sc, n)
			if !ok {
				continue
			}
			name := func(what string) string { return fmt.Sprintf("N=%d %s: %s", n, sc, what) }
			if hasRaw {
				v := ratio(td.Throughput, raw.Throughput)
				out = append(out, Target{name("throughput vs raw limit"), fmt.Sprintf(">= %.1fx", MinVsRaw),
					fmt.Sprintf("%.2fx (%.0f vs %.0f/s)", v, td.Throughput, raw.Throughput), v >= MinVsRaw})
			}
			if hasBD {
				v := ratio(td.Throughput, bd.Throughput)
				out = append(out, Target{name("throughput vs default baseline"), fmt.Sprintf(">= %.1fx", MinVsBaselineDefault),
					fmt.Sprintf("%.2fx (%.0f vs %.0f/s)", v, td.Throughput, bd.Throughput), v >= MinVsBaselineDefault})
			}
			if hasBT {
				v := ratio(td.Throughput, bt.Throughput)
				out = append(out, Target{name("throughput vs tuned baseline"), fmt.Sprintf(">= %.1fx", MinVsBaselineTuned),
					fmt.Sprintf("%.2fx (%.0f vs %.0f/s)", v, td.Throughput, bt.Throughput), v >= MinVsBaselineTuned})
			}
			maxAttach, wantAttach := MaxAttachWrites, fmt.Sprintf("<= %.0f", MaxAttachWrites)
			if sc == TeardownDeclared {
				maxAttach, wantAttach = 0, "0 (Declared)"
			}
			out = append(out,
				Target{name("attach writes per object"), wantAttach, fmt.Sprintf("%.3f", td.AttachWrites), td.AttachWrites <= maxAttach},
				Target{name("remove writes per object"), fmt.Sprintf("<= %.0f", MaxRemoveWrites), fmt.Sprintf("%.3f", td.RemoveWrites), td.RemoveWrites <= MaxRemoveWrites},
				Target{name("conflicts among its writes"), fmt.Sprintf("< %.0f%%", MaxConflictShare*100),
					fmt.Sprintf("%.2f%% (%.0f of %.0f)", td.ConflictShare*100, td.Conflicts, td.Writes), td.ConflictShare < MaxConflictShare})
		}
	}
	td, okTD := r.FindRSS(Teardown)
	bl, okBL := r.FindRSS(BaselineTuned)
	if okTD {
		out = append(out, Target{fmt.Sprintf("marginal RSS per guarded object (%d ConfigMaps of %d B)", td.Objects, td.DataBytes),
			fmt.Sprintf("<= %.0f B", MaxRSSPerObject), fmt.Sprintf("%.0f B", td.PerObject), td.PerObject <= MaxRSSPerObject})
	}
	if okTD && okBL {
		v := ratio(bl.PerObject, td.PerObject)
		out = append(out, Target{"marginal RSS per guarded object vs baseline", fmt.Sprintf(">= %.0fx below", MinRSSVsBaseline),
			fmt.Sprintf("%.1fx below (%.0f B vs %.0f B)", v, td.PerObject, bl.PerObject), v >= MinRSSVsBaseline})
	}
	return out
}
