/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The API server's words, as TestExplainCorruptObject (test/plugin/chains)
// records them from kube-apiserver 1.36 with AllowUnsafeMalformedObjectDeletion.
const (
	corruptGet  = "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /configmaps/shop/ledger, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=217: illegal base64 data at input byte 0"
	corruptItem = "StorageError: corrupt object, Code: 7, Key: /registry/configmaps/shop/ledger, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=217: illegal base64 data at input byte 0"
)

func TestCorruptKeys(t *testing.T) {
	list := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: reasonStorageReadError,
		Message: "failed to read one or more configmaps from the storage",
		Details: &metav1.StatusDetails{Name: "list", Kind: "configmaps", Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeUnexpectedServerResponse, Message: corruptItem, Field: "/registry/configmaps/shop/ledger"}}}}}
	get := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError, Message: corruptGet}}
	for _, tc := range []struct {
		name   string
		err    error
		want   []unreadable
		failed bool
	}{
		{"list", fmt.Errorf("listing /v1, Resource=configmaps: %w", list), []unreadable{{Key: "/configmaps/shop/ledger", Why: corruptItem}}, true},
		{"get", fmt.Errorf("getting configmaps shop/ledger: %w", get), []unreadable{{Key: "/configmaps/shop/ledger", Why: corruptGet}}, true},
		{"without the gate", errors.New(`Internal error occurred: unable to transform key "/registry/secrets/shop/db": no matching prefix found`),
			[]unreadable{{Key: "/secrets/shop/db", Why: `Internal error occurred: unable to transform key "/registry/secrets/shop/db": no matching prefix found`}}, true},
		// A GET without the gate: the transformer's words, no key (issue 17).
		{"encrypted with a lost key", errors.New(`Internal error occurred: identity transformer tried to read encrypted data`), nil, true},
		{"damaged ciphertext", errors.New(`Internal error occurred: cipher: message authentication failed`), nil, true},
		{"webhook", errors.New(`Internal error occurred: failed calling webhook "v.example.com": connection refused`), nil, false},
		{"nil", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failed := corruptKeys(tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" || failed != tc.failed {
				t.Errorf("corruptKeys: failed %v (want %v), keys (-want +got):\n%s", failed, tc.failed, diff)
			}
		})
	}
}

func TestObjectOfKey(t *testing.T) {
	type obj struct{ Group, Resource, NS, Name string }
	for _, tc := range []struct {
		key        string
		namespaced bool
		want       *obj
	}{
		{"/registry/configmaps/shop/ledger", true, &obj{"", "configmaps", "shop", "ledger"}},
		{"/widgets.example.com/widgets/shop/w1", true, &obj{"widgets.example.com", "widgets", "shop", "w1"}},
		{"/registry/persistentvolumes/pv-1", false, &obj{"", "persistentvolumes", "", "pv-1"}},
		{"/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com", false, &obj{"apiextensions.k8s.io", "customresourcedefinitions", "", "widgets.example.com"}},
		{"/registry/configmaps", true, nil},
		{"/a/b/c/d/e", true, nil},
		{"", false, nil},
	} {
		g, r, ns, n, ok := objectOfKey(tc.key, tc.namespaced)
		var got *obj
		if ok {
			got = &obj{g, r, ns, n}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("objectOfKey(%q, %v) (-want +got):\n%s", tc.key, tc.namespaced, diff)
		}
	}
}

// FuzzCorruptKeys: the API server's messages are read, never trusted to be
// well formed.
func FuzzCorruptKeys(f *testing.F) {
	f.Add(corruptGet, "/registry/configmaps/shop/ledger")
	f.Add(`unable to transform key "/registry/secrets/a/b": x`, "")
	f.Add("Key: /", "/")
	f.Fuzz(func(t *testing.T, msg, field string) {
		err := &apierrors.StatusError{ErrStatus: metav1.Status{Message: msg, Reason: reasonStorageReadError,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: msg, Field: field}}}}}
		keys, _ := corruptKeys(err)
		for _, k := range keys {
			if len(k.Key) == 0 || k.Key[0] != '/' {
				t.Fatalf("key %q does not start with /", k.Key)
			}
			for _, namespaced := range []bool{true, false} {
				if _, r, _, n, ok := objectOfKey(k.Key, namespaced); ok && (r == "" || n == "") {
					t.Fatalf("objectOfKey(%q) = empty resource or name", k.Key)
				}
			}
		}
	})
}

func TestInternalReadError(t *testing.T) {
	status := func(code int32, msg string) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: code, Message: msg}}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the decoder's words", fmt.Errorf("getting configmaps: %w", status(500, "illegal base64 data at input byte 0")), true},
		{"etcd unavailable", status(500, "etcdserver: request timed out"), false},
		{"a deadline", status(500, "context deadline exceeded"), false},
		{"an authorization webhook", status(500, "Internal error occurred: authorization webhook: connection refused"), false},
		{"not found", status(404, `configmaps "x" not found`), false},
		{"not a status", errors.New("illegal base64 data at input byte 0"), false},
	} {
		if got := internalReadError(tc.err); got != tc.want {
			t.Errorf("%s: internalReadError = %v, want %v", tc.name, got, tc.want)
		}
	}
}
