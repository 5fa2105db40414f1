/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package finalizer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrNilObject is returned when a nil object is passed in.
var ErrNilObject = errors.New("object is nil")

// ValidateName checks that name is a domain-qualified finalizer name such as
// example.com/cleanup. The API server accepts unqualified names but warns
// since Kubernetes 1.29; a prefix that is a DNS subdomain with a dot is what
// keeps two controllers from using the same key by accident.
func ValidateName(name string) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("invalid finalizer name %q: %s", name, strings.Join(errs, "; "))
	}
	prefix, _, ok := strings.Cut(name, "/")
	if !ok || !strings.Contains(prefix, ".") {
		return fmt.Errorf("invalid finalizer name %q: must be domain-qualified, like example.com/%s", name, strings.TrimPrefix(name, prefix+"/"))
	}
	return nil
}

// checkObject rejects nil objects, including typed nils hidden in the
// interface, and objects without a name.
func checkObject(obj client.Object) error {
	if obj == nil {
		return ErrNilObject
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return ErrNilObject
	}
	if obj.GetName() == "" {
		return errors.New("object has no name")
	}
	return nil
}

// describe names an object in errors and logs.
func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = reflect.TypeOf(obj).Elem().Name()
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}
