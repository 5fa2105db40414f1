/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/pkg/finalizer"
)

func TestRefused(t *testing.T) {
	r := NewRefused()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Add(RefusedObject{UID: "a", Name: "a", Write: finalizer.WriteAttach, Since: t0})
	r.Add(RefusedObject{UID: "a", Name: "a", Write: finalizer.WriteAttach, Since: t0.Add(time.Minute), Message: "again"})
	if got := r.List(); len(got) != 1 || !got[0].Since.Equal(t0) || got[0].Message != "again" {
		t.Errorf("refused again = %+v, want one entry keeping the first since and the last message", got)
	}
	// The same object, now guarded and being deleted, refused its progress.
	r.Add(RefusedObject{UID: "a", Name: "a", Write: finalizer.WriteProgress, Since: t0.Add(time.Hour)})
	if got := r.List(); len(got) != 1 || got[0].Write != finalizer.WriteProgress || !got[0].Since.Equal(t0.Add(time.Hour)) {
		t.Errorf("another write refused = %+v, want it in place, since its own refusal", got)
	}
	r.Forget("a", finalizer.WriteAttach)
	if !r.Has("a") {
		t.Error("forgetting the attach write dropped a progress refusal")
	}
	r.Forget("a", finalizer.WriteProgress)
	if r.Has("a") {
		t.Error("the progress refusal is still held once its write went through")
	}

	for i := range MaxRefused + 10 {
		r.Add(RefusedObject{UID: types.UID(fmt.Sprint(i)), Name: fmt.Sprint(i), Since: t0.Add(time.Duration(i) * time.Second)})
	}
	if got := len(r.List()); got != MaxRefused {
		t.Errorf("%d objects held, want the bound %d", got, MaxRefused)
	}
	r.Keep(func(uid types.UID) bool { return uid == "7" })
	if got := r.List(); len(got) != 1 || got[0].UID != "7" {
		t.Errorf("after Keep: %+v, want only 7", got)
	}

	var none *Refused
	none.Add(RefusedObject{UID: "x"})
	if none.Has("x") || none.List() != nil {
		t.Error("a nil set holds something")
	}
}
