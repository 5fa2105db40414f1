/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller

import (
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newRESTMapper is the manager's RESTMapper: controller-runtime's lazy
// discovery mapper, with its RESTMapping answers remembered.
//
// controller-runtime's metadata client asks the mapper for the resource of
// every request it sends (the typed client remembers it; the metadata
// client does not), and the lazy mapper answers through a priority and a
// multi mapper that allocate on every call: 4% of the controller's CPU in
// the benchmark's delete phase (docs/performance.md, "Controller CPU"),
// one finalizer removal patch per object.
func newRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &rememberingMapper{RESTMapper: m}, nil
}

// rememberingMapper remembers the RESTMapping answers of one version. The
// lazy mapper it wraps reloads a group's discovery only inside a call that
// missed (of any of its methods), and never forgets a mapping by itself; so
// every call that reaches it forgets what was remembered, and an answer is
// remembered only from a call during which no other call reached it:
// nothing remembered predates a reload.
type rememberingMapper struct {
	meta.RESTMapper

	mu       sync.Mutex
	mapping  map[mappingKey]meta.RESTMapping
	asks     uint64 // calls that reached the wrapped mapper, ever
	inFlight int    // those still running
}

type mappingKey struct {
	gk      schema.GroupKind
	version string
}

func (m *rememberingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 || versions[0] == "" {
		defer m.ask()(nil)
		return m.RESTMapper.RESTMapping(gk, versions...)
	}
	key := mappingKey{gk, versions[0]}
	m.mu.Lock()
	known, ok := m.mapping[key]
	m.mu.Unlock()
	if ok {
		// A copy: the caller may change what it is given.
		return &known, nil
	}
	done := m.ask()
	got, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err != nil || got == nil {
		done(nil)
		return got, err
	}
	done(func(remember map[mappingKey]meta.RESTMapping) { remember[key] = *got })
	return got, nil
}

// ask forgets every remembered answer and counts a call to the wrapped
// mapper; the function it returns ends that call, and runs remember with
// the table when no other call reached the wrapped mapper meanwhile.
func (m *rememberingMapper) ask() func(remember func(map[mappingKey]meta.RESTMapping)) {
	m.mu.Lock()
	m.mapping = nil
	m.asks++
	m.inFlight++
	mine := m.asks
	m.mu.Unlock()
	return func(remember func(map[mappingKey]meta.RESTMapping)) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.inFlight--
		if remember == nil || m.asks != mine || m.inFlight != 0 {
			return
		}
		if m.mapping == nil {
			m.mapping = map[mappingKey]meta.RESTMapping{}
		}
		remember(m.mapping)
	}
}

func (m *rememberingMapper) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	defer m.ask()(nil)
	return m.RESTMapper.KindFor(resource)
}

func (m *rememberingMapper) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	defer m.ask()(nil)
	return m.RESTMapper.KindsFor(resource)
}

func (m *rememberingMapper) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	defer m.ask()(nil)
	return m.RESTMapper.ResourceFor(input)
}

func (m *rememberingMapper) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	defer m.ask()(nil)
	return m.RESTMapper.ResourcesFor(input)
}

func (m *rememberingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	defer m.ask()(nil)
	return m.RESTMapper.RESTMappings(gk, versions...)
}

func (m *rememberingMapper) ResourceSingularizer(resource string) (string, error) {
	defer m.ask()(nil)
	return m.RESTMapper.ResourceSingularizer(resource)
}

// Reset forgets, and resets the wrapped mapper when it can be.
func (m *rememberingMapper) Reset() {
	defer m.ask()(nil)
	if r, ok := m.RESTMapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
}
