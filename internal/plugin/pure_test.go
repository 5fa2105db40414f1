/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/diagnose"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

func TestSplitTargetArgs(t *testing.T) {
	cases := []struct {
		args      []string
		typ, name string
		wantErr   bool
	}{
		{[]string{"ns/shop"}, "ns", "shop", false},
		{[]string{"configmap", "x"}, "configmap", "x", false},
		{[]string{"widgets.example.com/w1"}, "widgets.example.com", "w1", false},
		{[]string{"shop"}, "", "", true},
		{[]string{"ns/", "x"}, "", "", true},
		{[]string{"a", "b", "c"}, "", "", true},
	}
	for _, c := range cases {
		typ, name, err := splitTargetArgs(c.args)
		if typ != c.typ || name != c.name || (err != nil) != c.wantErr {
			t.Errorf("splitTargetArgs(%v) = %q, %q, %v", c.args, typ, name, err)
		}
	}
}

func TestBuildPlanPure(t *testing.T) {
	item := func(name string, uid types.UID, owners ...metav1.OwnerReference) kube.MetaItem {
		return kube.MetaItem{Res: kube.APIResource{Kind: "ConfigMap"}, Obj: metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, OwnerReferences: owners}}}
	}
	ref := func(uid types.UID) metav1.OwnerReference { return metav1.OwnerReference{UID: uid} }
	root := item("root", "r")
	items := []kube.MetaItem{root, item("a", "a", ref("r")), item("b", "b", ref("a")), item("cycle", "c", ref("b"), ref("c"))}
	rep := buildPlan(root, items, cascadeBackground, nil)
	if rep.Summary.Deleted != 4 {
		t.Errorf("summary = %+v, want 4 deleted (cycles visited once)", rep.Summary)
	}
}

func TestMarkStuck(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	row := func(name string, deleted time.Duration) StatusRow {
		return StatusRow{Object: diagnose.ObjectRef{Kind: "Pod", Name: name}, DeletionTimestamp: metav1.Time{Time: now.Add(-deleted)}}
	}
	rep := &StatusReport{Items: []StatusRow{
		row("old", 10*time.Minute),
		row("recent", time.Minute),
		// A pod inside its grace period has a deletionTimestamp ahead.
		row("in-grace", -20*time.Minute),
	}}
	markStuck(rep, now, 0)
	if rep.Stuck != 0 || rep.StuckAfter != "" || stuckExit(rep) != nil {
		t.Fatalf("without a threshold nothing is stuck: %+v", rep)
	}
	markStuck(rep, now, 5*time.Minute)
	var got []string
	for _, it := range rep.Items {
		if it.Stuck {
			got = append(got, it.Object.Name)
		}
	}
	if diff := cmp.Diff([]string{"old"}, got); diff != "" {
		t.Errorf("stuck (-want +got):\n%s", diff)
	}
	if rep.Stuck != 1 || rep.StuckAfter != "5m" || !errors.Is(stuckExit(rep), errBlocked) {
		t.Errorf("report = %d stuck after %q, exit %v", rep.Stuck, rep.StuckAfter, stuckExit(rep))
	}
	for d, want := range map[time.Duration]string{5 * time.Minute: "5m", 90 * time.Second: "1m30s", time.Hour: "1h", 90 * time.Minute: "1h30m", 30 * time.Second: "30s"} {
		if got := diagnose.ShortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
