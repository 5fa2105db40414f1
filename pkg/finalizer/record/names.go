/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package record

import (
	"sync"
	"sync/atomic"
)

// maxRememberedNames bounds the finalizers whose annotation names are
// remembered: a controller asks for the same few keys for every object it
// reconciles, while a diagnosis may ask for any key an object carries.
const maxRememberedNames = 1024

// names are the annotation keys of one finalizer's records.
type names struct {
	progress, attached, seal string
}

// rememberedNames builds each finalizer's annotation names once: they were
// built (three allocations) several times per object reconciled.
type rememberedNames struct {
	m     sync.Map // finalizer -> names
	count atomic.Int32
}

var annotationNames rememberedNames

func (r *rememberedNames) of(finalizer string) names {
	if n, ok := r.m.Load(finalizer); ok {
		return n.(names)
	}
	name := annotationName(finalizer)
	n := names{progress: ProgressAnnotationPrefix + name, attached: AttachedAnnotationPrefix + name, seal: SealAnnotationPrefix + name}
	if r.count.Load() < maxRememberedNames {
		if _, loaded := r.m.LoadOrStore(finalizer, n); !loaded {
			r.count.Add(1)
		}
	}
	return n
}
