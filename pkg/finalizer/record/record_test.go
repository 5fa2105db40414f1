/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadProgress(t *testing.T) {
	obj := &metav1.ObjectMeta{UID: "uid-1", Annotations: map[string]string{
		ProgressAnnotation("b.example.com/x"):     `{"finalizer":"b.example.com/x","state":"Retry","attempts":2,"updated":"2026-11-22T00:00:00Z"}`,
		ProgressAnnotation("a.example.com/y"):     `{"finalizer":"a.example.com/y","state":"Pending","attempts":1,"updated":"2026-11-22T00:00:00Z"}`,
		ProgressAnnotation("c.example.com/z"):     `not json`,
		AttachedAnnotation("a.example.com/y"):     "uid-1",
		AttachedAnnotation("d.example.com/w"):     "true",
		"unrelated.example.com/progress":          `{"finalizer":"x"}`,
		ProgressAnnotationPrefix + "no-finalizer": `{"state":"Done"}`,
	}}
	got := ReadProgress(obj)
	if len(got) != 2 || got[0].Finalizer != "a.example.com/y" || got[1].State != StateRetry || got[1].Attempts != 2 {
		t.Errorf("ReadProgress = %+v", got)
	}
	if p, ok := ReadOne(obj, "b.example.com/x"); !ok || p.State != StateRetry {
		t.Errorf("ReadOne = %+v, %v", p, ok)
	}
	if _, ok := ReadOne(obj, "c.example.com/z"); ok {
		t.Error("ReadOne read a record that does not parse")
	}
	if !Attached(obj, "a.example.com/y") || Attached(obj, "b.example.com/x") || Attached(obj, "d.example.com/w") {
		t.Error("Attached: only a record bound to the object's UID proves it")
	}
	obj.Annotations[AttachedAnnotation("e.example.com/v")] = "uid-1/policy-a"
	if by, ok := AttachedBy(obj, "e.example.com/v"); !ok || by != "policy-a" {
		t.Errorf("AttachedBy = %q, %v; want policy-a", by, ok)
	}
	if by, ok := AttachedBy(obj, "a.example.com/y"); !ok || by != "" {
		t.Errorf("AttachedBy of a record naming no one = %q, %v", by, ok)
	}
	obj.Annotations[AttachedAnnotation("f.example.com/u")] = "uid-2/policy-a"
	if _, ok := AttachedBy(obj, "f.example.com/u"); ok {
		t.Error("AttachedBy believed a record bound to another object")
	}
	if !MarkedAttached(obj, "d.example.com/w") || MarkedAttached(obj, "b.example.com/x") {
		t.Error("MarkedAttached")
	}
	copied := obj.DeepCopy()
	copied.UID = "uid-2" // restored from a backup, or forged at CREATE
	if Attached(copied, "a.example.com/y") {
		t.Error("Attached believed a record written for another object")
	}
}

func TestAnnotationNames(t *testing.T) {
	if got := ProgressAnnotation("teardown.dev/dns"); got != "progress.finalizer.teardown.dev/teardown.dev_dns" {
		t.Errorf("ProgressAnnotation = %q", got)
	}
	long := strings.Repeat("x", 80) + "/y"
	name := strings.TrimPrefix(AttachedAnnotation(long), AttachedAnnotationPrefix)
	if len(name) > 63 || name == strings.TrimPrefix(AttachedAnnotation(long+"z"), AttachedAnnotationPrefix) {
		t.Errorf("long name %q", name)
	}
}
