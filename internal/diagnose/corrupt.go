/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A corrupt object in storage (F1, issue 11 family 6): kube-apiserver
// cannot decode (or decrypt) an object's bytes in etcd. A GET of it fails
// with "StorageError: corrupt object" (with the AllowUnsafeMalformedObjectDeletion
// feature gate; "unable to transform or decode" without), a list of its
// kind fails with reason StorageReadError, so nothing can remove its
// finalizers, and the namespace controller cannot empty its namespace.
// Neither webhooks nor API availability are to blame: the object is.

// CauseCorruptObject: kube-apiserver cannot read the object from storage.
const CauseCorruptObject = "CorruptObject" // F1

// reasonStorageReadError is the status reason of a list that met objects it
// could not read (KEP-3926); its causes name their etcd keys.
const reasonStorageReadError metav1.StatusReason = "StorageReadError"

// storageReadMarkers are the API server's words for an object it cannot
// read from storage: apiserver/pkg/storage (corrupt object, KEP-3926),
// the etcd3 store's transformer and decoder errors, and the list error.
var storageReadMarkers = []string{
	"corrupt object",
	"unable to transform or decode",
	"unable to transform key",
	"object not decodable",
	"unable to decode an event from the watch stream",
	"from the storage", // "failed to read one or more configmaps from the storage"
	// Without the feature gate, the transformers' own words
	// (apiserver/pkg/storage/value): an object encrypted with a key
	// kube-apiserver no longer has, or damaged ciphertext.
	"identity transformer tried to read encrypted data",
	"no matching prefix found",
	"failed to decrypt",
	"invalid padding on input",
	"cipher: message authentication failed",
	"the stored data was shorter than the required size",
	"the stored data is not a multiple of the block size",
}

// ownStorageFailure says whether err, a failed GET of t, is kube-apiserver
// failing to read the object from its own storage without saying so: a
// decoder's error (without the AllowUnsafeMalformedObjectDeletion gate the
// etcd3 store returns it as is: "illegal base64 data at input byte 0",
// "json: cannot unmarshal ...") is an internal error (500) about an object
// served from kube-apiserver's own storage: a built-in resource or a CRD
// converted without a webhook, not an aggregated API. etcd being
// unavailable or slow, or a webhook (conversion, authorization) failing, is
// not the object's fault, and is left out.
func (e *Explainer) ownStorageFailure(ctx context.Context, t Target, err error, crd crdInfo, isCRD bool) bool {
	if !internalReadError(err) || (isCRD && crd.Strategy == "Webhook") {
		return false
	}
	_, aggregated := e.apiServiceOf(ctx, t.GVR.GroupVersion())
	return !aggregated
}

// internalReadError says whether err is an internal error (500) that is
// neither etcd's availability nor a webhook's.
func internalReadError(err error) bool {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 500 {
		return false
	}
	msg := strings.ToLower(se.ErrStatus.Message)
	for _, m := range []string{"etcdserver", "context deadline exceeded", "timeout", "connection refused", "too many requests", "webhook", "authoriz"} {
		if strings.Contains(msg, m) {
			return false
		}
	}
	return true
}

// storageReadFailure says whether msg is kube-apiserver failing to read
// objects from storage.
func storageReadFailure(msg string) bool {
	for _, m := range storageReadMarkers {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

// keyInMessage finds the etcd keys a storage error names: "Key:
// /configmaps/shop/ledger," (StorageError) or `key "/registry/..."`.
var keyInMessage = regexp.MustCompile(`(?:Key: |key ")(/[^\s,"]+)`)

// unreadable is one object kube-apiserver says it cannot read: its storage
// key (without the /registry prefix) and the API server's words about it.
type unreadable struct {
	Key, Why string
}

// corruptKeys returns the objects err says kube-apiserver cannot read, and
// whether err is such a failure at all.
func corruptKeys(err error) ([]unreadable, bool) {
	if err == nil {
		return nil, false
	}
	var out []unreadable
	seen := map[string]bool{}
	add := func(k, why string) {
		k = "/" + strings.TrimPrefix(strings.TrimPrefix(k, "/registry"), "/")
		if !seen[k] {
			seen[k] = true
			out = append(out, unreadable{Key: k, Why: why})
		}
	}
	var se *apierrors.StatusError
	isStatus := errors.As(err, &se)
	if isStatus && se.ErrStatus.Details != nil {
		for _, c := range se.ErrStatus.Details.Causes {
			if strings.HasPrefix(c.Field, "/") {
				add(c.Field, c.Message)
			}
			for _, m := range keyInMessage.FindAllStringSubmatch(c.Message, -1) {
				add(m[1], c.Message)
			}
		}
	}
	why := err.Error()
	if isStatus {
		why = se.ErrStatus.Message
	}
	for _, m := range keyInMessage.FindAllStringSubmatch(why, -1) {
		add(m[1], why)
	}
	failed := (isStatus && se.ErrStatus.Reason == reasonStorageReadError) || storageReadFailure(err.Error())
	return out, failed
}

// objectOfKey reads an etcd key of kube-apiserver's default layout,
// [/registry]/[group/]resource/[namespace/]name, for an object of a
// resource in namespace ns ("" if cluster-scoped).
func objectOfKey(key string, namespaced bool) (group, resource, ns, name string, ok bool) {
	parts := strings.Split(strings.Trim(key, "/"), "/")
	if len(parts) > 0 && parts[0] == "registry" {
		parts = parts[1:]
	}
	if namespaced {
		if len(parts) < 3 || len(parts) > 4 {
			return "", "", "", "", false
		}
		ns, name, parts = parts[len(parts)-2], parts[len(parts)-1], parts[:len(parts)-2]
	} else {
		if len(parts) < 2 || len(parts) > 3 {
			return "", "", "", "", false
		}
		name, parts = parts[len(parts)-1], parts[:len(parts)-1]
	}
	resource = parts[len(parts)-1]
	if len(parts) == 2 {
		group = parts[0]
	}
	if resource == "" || name == "" {
		return "", "", "", "", false
	}
	return group, resource, ns, name, true
}

// corruptFinding is F1 for one object kube-apiserver cannot read.
func corruptFinding(ref ObjectRef, gvr schema.GroupVersionResource, key, why string) Finding {
	path := "/api/" + gvr.Version
	if gvr.Group != "" {
		path = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	if ref.Namespace != "" {
		path += "/namespaces/" + ref.Namespace
	}
	path += "/" + gvr.Resource + "/" + ref.Name
	where := ""
	if key != "" {
		where = fmt.Sprintf(" (etcd key %s)", key)
	}
	return Finding{Cause: CauseCorruptObject, Catalog: "F1", Severity: SeverityBlocker, Object: &ref,
		Message: fmt.Sprintf("kube-apiserver cannot read %s from storage%s: %s. Nobody can get, update or delete it the normal way: its finalizers cannot be removed, lists of %s fail, and so does the deletion of its namespace",
			ref, where, why, resourceName(gvr)),
		FixOwner: "cluster admin (etcd, and kube-apiserver's encryption configuration)",
		Remedy: fmt.Sprintf("find why it cannot be decoded: a lost or rotated encryption key or KMS plugin (put it back in kube-apiserver's --encryption-provider-config and the object reads again), or bytes damaged in etcd (restore the object from an etcd backup). If it cannot be recovered, delete it without reading it: kubectl delete --raw '%s?ignoreStoreReadErrorWithClusterBreakingPotential=true' (kube-apiserver needs the AllowUnsafeMalformedObjectDeletion feature gate, alpha since 1.32, and you the verbs delete and unsafe-delete-ignore-read-errors on %s)",
			path, resourceName(gvr)),
		Leaks: "the unsafe delete skips finalizers and admission: what its finalizers would clean up outside the cluster is leaked, its content is lost, and controllers watching " + resourceName(gvr) + " see it vanish without a normal deletion (the option's name warns it can break the cluster)"}
}

// corruptTarget is the report for a target kube-apiserver cannot read; nil
// when err is another failure.
func (e *Explainer) corruptTarget(t Target, err error) *Report {
	keys, failed := corruptKeys(err)
	if !failed {
		return nil
	}
	key := ""
	if len(keys) > 0 {
		key = "/registry" + keys[0].Key
	}
	var se *apierrors.StatusError
	why := err.Error()
	if errors.As(err, &se) {
		why = se.ErrStatus.Message
	}
	rep := &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.Ref(), Unreadable: true}
	rep.Findings = []Finding{corruptFinding(t.Ref(), t.GVR, key, why)}
	rep.RootBlockers = MarkRoots(rep.Findings)
	rep.Blocked = true
	return rep
}

// listFailure explains a list of namespace ns that failed: F1 for each
// object kube-apiserver cannot read, ListFailed otherwise.
func (e *Explainer) listFailure(ctx context.Context, ns string, err error) []Finding {
	keys, failed := corruptKeys(err)
	if !failed || len(keys) == 0 {
		// What blocks the list, when its CRD's conversion says (unreadable.go).
		if f, ok := e.listBlocker(ctx, err); ok {
			return []Finding{f}
		}
		return []Finding{{Cause: "ListFailed", Severity: SeverityWarning, Message: err.Error()}}
	}
	var out []Finding
	for _, u := range keys {
		group, resource, objNS, name, ok := objectOfKey(u.Key, true)
		if !ok || objNS != ns {
			continue
		}
		ref := ObjectRef{Resource: resource, Namespace: objNS, Name: name}
		gvr := schema.GroupVersionResource{Group: group, Resource: resource}
		rs, _ := e.c.Resources()
		for _, r := range rs {
			if r.GVR.Group == group && r.GVR.Resource == resource {
				gvr, ref.APIVersion, ref.Kind = r.GVR, r.APIVersion(), r.Kind
			}
		}
		out = append(out, corruptFinding(ref, gvr, "/registry"+u.Key, u.Why))
	}
	if len(out) == 0 {
		return []Finding{{Cause: "ListFailed", Severity: SeverityWarning, Message: err.Error()}}
	}
	return out
}
