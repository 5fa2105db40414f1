/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package recordseal

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestLoad: the first replica makes the Secret with one key; the next
// reads the same key; a Secret whose key is too short stops the start
// with a message naming it.
func TestLoad(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	now := func() time.Time { return time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC) }
	first, err := Load(t.Context(), c, c, "teardown-system", DefaultSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if first.Sealing() != "2026-11-28" {
		t.Errorf("the first key is %q, want the day it was made", first.Sealing())
	}
	second, err := Load(t.Context(), c, c, "teardown-system", DefaultSecret, now)
	if err != nil {
		t.Fatal(err)
	}
	if seal := first.Seal("a"); !second.Verify(seal, "a") {
		t.Error("a second replica does not check what the first sealed")
	}

	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: DefaultSecret}, Data: map[string][]byte{"k1": []byte("x")}}
	if err := c.Create(t.Context(), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(t.Context(), c, c, "other", DefaultSecret, now); err == nil || !strings.Contains(err.Error(), "Secret other/teardown-record-keys") {
		t.Errorf("a short key: err = %v", err)
	}
	var got corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "other", Name: DefaultSecret}, &got); err != nil || string(got.Data["k1"]) != "x" {
		t.Errorf("the bad Secret was changed: %v %v", err, got.Data)
	}
}
