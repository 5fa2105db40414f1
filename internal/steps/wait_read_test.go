/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
)

// pagedReader serves n ConfigMaps with size bytes of data each, page by
// page, and counts the list calls by kind of list.
type pagedReader struct {
	client.Reader
	n, size         int
	metadata, whole atomic.Int32
	maxLimit        atomic.Int64
	delay           time.Duration
}

func (p *pagedReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	time.Sleep(p.delay)
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.Limit > p.maxLimit.Load() {
		p.maxLimit.Store(o.Limit)
	}
	from, _ := strconv.Atoi(o.Continue)
	to := min(p.n, from+int(o.Limit))
	next := ""
	if to < p.n {
		next = strconv.Itoa(to)
	}
	switch l := list.(type) {
	case *metav1.PartialObjectMetadataList:
		p.metadata.Add(1)
		for i := from; i < to; i++ {
			l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm-", i), Namespace: "ns", Labels: map[string]string{"i": fmt.Sprint(i)}}})
		}
		l.Continue = next
	case *unstructured.UnstructuredList:
		p.whole.Add(1)
		for i := from; i < to; i++ {
			u := unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprint("cm-", i), "namespace": "ns"},
				"data":     map[string]any{"blob": strings.Repeat("x", p.size), "state": "busy"},
			}}
			l.Items = append(l.Items, u)
		}
		l.SetContinue(next)
	default:
		return errors.New("unexpected list type")
	}
	return nil
}

func TestWaitReadDecisions(t *testing.T) {
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}}
	for name, tc := range map[string]struct {
		condition         string
		n, size           int
		wantMetadataPages int32
		wantWholePages    int32
		wantTooLarge      bool
		wantKept          string // the first object as kept
	}{
		"a count lists metadata and keeps nothing": {
			condition: "size(objects) == 0", n: 120, size: 1 << 20,
			wantMetadataPages: 3, wantKept: "map[]",
		},
		"labels list metadata and keep the labels": {
			condition: "objects.all(o, o.metadata.labels['i'] != '')", n: 10, size: 1 << 20,
			wantMetadataPages: 1, wantKept: "map[metadata:map[labels:map[i:0]]]",
		},
		"a data field lists whole objects in pages and keeps that field": {
			condition: "objects.all(o, o.data.state == 'done')", n: 45, size: 100 << 10,
			wantWholePages: 3, wantKept: "map[data:map[state:busy]]",
		},
		"the whole data past the bound stops the read": {
			condition: "objects.all(o, size(o.data) == 0)", n: 100, size: 100 << 10,
			wantWholePages: 3, wantTooLarge: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			reads, err := policy.ConditionReads(tc.condition)
			if err != nil {
				t.Fatal(err)
			}
			reader := &pagedReader{n: tc.n, size: tc.size}
			r := &Runner{Mapper: testMapper()}
			_, read, err := r.readForCondition(t.Context(), reader, pol, configMapSelector(), reads, "", Object{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Obj: target()})
			var tooLarge *WaitTooLargeError
			if got := errors.As(err, &tooLarge); got != tc.wantTooLarge {
				t.Fatalf("err = %v, want too large %v", err, tc.wantTooLarge)
			}
			if got := reader.metadata.Load(); got != tc.wantMetadataPages {
				t.Errorf("%d metadata pages read, want %d", got, tc.wantMetadataPages)
			}
			if got := reader.whole.Load(); got != tc.wantWholePages {
				t.Errorf("%d pages of whole objects read, want %d", got, tc.wantWholePages)
			}
			if tc.wantTooLarge {
				return
			}
			if len(read.objects) != tc.n || len(read.names) != tc.n {
				t.Fatalf("read %d objects, %d names; want %d", len(read.objects), len(read.names), tc.n)
			}
			if got := fmt.Sprint(read.objects[0]); got != tc.wantKept {
				t.Errorf("kept %s, want %s", got, tc.wantKept)
			}
		})
	}
}

// TestWaitReadShared: targets reading the same set at once share one read.
func TestWaitReadShared(t *testing.T) {
	pol := &policy.Policy{Ref: policy.Ref{Kind: policy.KindNamespaced, Namespace: "ns", Name: "p"}}
	reads, err := policy.ConditionReads("objects.all(o, o.data.state == 'done')")
	if err != nil {
		t.Fatal(err)
	}
	reader := &pagedReader{n: 5, size: 10, delay: 200 * time.Millisecond}
	r := &Runner{Mapper: testMapper()}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, _, err := r.readForCondition(t.Context(), reader, pol, configMapSelector(), reads, "", Object{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Obj: target()}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := reader.whole.Load(); got != 1 {
		t.Errorf("16 targets at once made %d list calls, want 1", got)
	}
}

func configMapSelector() teardownv1alpha1.ResourceSelector {
	return teardownv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Selector: &metav1.LabelSelector{}}
}

func target() client.Object {
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: "ns", UID: "target-uid"}}
}
