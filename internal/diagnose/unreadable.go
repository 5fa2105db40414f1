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
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/teardown-dev/teardown/internal/cleantext"
	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// An object that cannot be read through the API (issue 20, family 3): a
// GET that fails for another reason than not-found or corrupt storage
// (corrupt.go) is a finding, never the end of the report. What decides
// whether it can be read is not the object but the path to it: the CRD's
// conversion (its webhook, its Service and endpoints, the namespace that
// Service lives in, the versions it still serves) or the APIService that
// serves its group. Explain reads those, tries every version the object is
// served at, and dry-runs a write at each, so that it can say which of
// reading, writing and removing finalizers is blocked, and at which
// versions they still work. When one version reads, the rest of the report
// is built from the object as read there.

// Causes of this family (see report.go).
const (
	// CauseConversionFailing: kube-apiserver cannot convert the object
	// between the version it is stored at and the one asked for, because
	// the CRD's conversion webhook fails.
	CauseConversionFailing = "ConversionWebhookFailing" // F3
	// CauseStoredVersionNotServed: the object is stored at a version the
	// CRD no longer lists, so nothing converts it.
	CauseStoredVersionNotServed = "StoredVersionNotServed" // F3
	// CauseReadFailed: the read failed for a reason none of the above
	// explains; the report carries the API server's words.
	CauseReadFailed = "ReadFailed" // F3
)

// VersionAccess is what a read and a dry-run write of the target did at one
// served version.
type VersionAccess struct {
	Version string `json:"version"`
	// Read is "ok" or the API server's error.
	Read string `json:"read"`
	// Write is the server-side dry-run of a patch removing the object's
	// finalizers: "ok", the API server's error, or "" when not tried.
	Write string `json:"write,omitempty"`
}

// accessOK is VersionAccess's word for a request that succeeded.
const accessOK = "ok"

// invalidGroupVersion is the conversion error for an object stored at, or
// asked for, a version the CRD does not list:
// apiextensions-apiserver/pkg/apiserver/conversion.
var invalidGroupVersion = regexp.MustCompile(`request to convert CR (?:from|to) an invalid group/version: ([^\s,"]+)`)

// crdInfo is what a CRD says about reading its objects.
type crdInfo struct {
	Name, Group, Plural, Strategy string
	// Served, Listed: the versions served, and every version listed.
	Served, Listed []string
	Storage        string
	StoredVersions []string
	// Webhook conversion's backend: a Service (namespace/name) or a URL.
	SvcNS, SvcName, URL string
	Deleting            bool
}

// crdFor is what the CRD serving group's resource says, false when none does.
func crdFor(ctx context.Context, c *kube.Cluster, group, resource string) (crdInfo, bool) {
	for _, crd := range c.CRDs(ctx) {
		g, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		if g != group || plural != resource {
			continue
		}
		in := crdInfo{Name: crd.GetName(), Group: g, Plural: plural, Deleting: crd.GetDeletionTimestamp() != nil}
		in.Strategy, _, _ = unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		in.StoredVersions, _, _ = unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			in.Listed = append(in.Listed, name)
			if s, _ := m["served"].(bool); s {
				in.Served = append(in.Served, name)
			}
			if s, _ := m["storage"].(bool); s {
				in.Storage = name
			}
		}
		cc := []string{"spec", "conversion", "webhook", "clientConfig"}
		in.SvcNS, _, _ = unstructured.NestedString(crd.Object, append(cc, "service", "namespace")...)
		in.SvcName, _, _ = unstructured.NestedString(crd.Object, append(cc, "service", "name")...)
		in.URL, _, _ = unstructured.NestedString(crd.Object, append(cc, "url")...)
		return in, true
	}
	return crdInfo{}, false
}

// unreadableTarget explains a target whose GET failed with err: what blocks
// the read, which versions still read and write, and, when one reads, the
// report of the object as read there.
func (e *Explainer) unreadableTarget(ctx context.Context, t Target, err error) *Report {
	crd, isCRD := crdFor(ctx, e.c, t.GVR.Group, t.GVR.Resource)
	versions := []string{t.GVR.Version}
	if isCRD {
		for _, v := range crd.Served {
			if !slices.Contains(versions, v) {
				versions = append(versions, v)
			}
		}
	}
	access, obj, at := e.probeVersions(ctx, t, versions, err)
	cause := e.readBlocker(ctx, t, err, crd, isCRD, access)

	var rep *Report
	if obj != nil {
		// Everything else is explained from the object as read at a version
		// that works; its finalizers' owners read it there too, or not.
		alt := t
		alt.GVR.Version, alt.GVK.Version = at, at
		rep = e.report(ctx, alt, obj)
		rep.Target = t.Ref()
		rep.Target.UID = string(obj.GetUID())
		rep.Findings = append([]Finding{cause}, rep.Findings...)
	} else {
		rep = &Report{APIVersion: ReportAPIVersion, Kind: "ExplainReport", Target: t.Ref(), Findings: []Finding{cause}}
	}
	rep.Unreadable, rep.Access = true, access
	rep.RootBlockers = MarkRoots(rep.Findings)
	rep.Blocked = len(rep.RootBlockers) > 0
	return rep
}

// probeVersions reads the target at each version, and dry-runs the removal
// of its finalizers there; it returns what each did and the object as read
// at the first version that reads.
func (e *Explainer) probeVersions(ctx context.Context, t Target, versions []string, first error) ([]VersionAccess, *unstructured.Unstructured, string) {
	var (
		out []VersionAccess
		obj *unstructured.Unstructured
		at  string
	)
	for _, v := range versions {
		gvr := t.GVR
		gvr.Version = v
		a := VersionAccess{Version: v}
		var got *unstructured.Unstructured
		var err error
		if v == t.GVR.Version && first != nil {
			err = first
		} else {
			got, err = e.c.GetObject(ctx, gvr, t.Namespace, t.Name)
		}
		switch {
		case err == nil:
			a.Read = accessOK
			if obj == nil {
				obj, at = got, v
			}
		default:
			a.Read = apiMessage(err)
		}
		a.Write = e.dryRunWrite(ctx, gvr, t.Namespace, t.Name)
		out = append(out, a)
	}
	return out, obj, at
}

// dryRunWrite sends, with dryRun=All, a merge patch that removes every
// finalizer of the object: the write a release (or its owner) would make.
// It needs no read first, so it also works where reads do not.
func (e *Explainer) dryRunWrite(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) string {
	if e.skipDryRun {
		return ""
	}
	err := e.c.DryRunStripFinalizers(ctx, gvr, ns, name)
	switch {
	case err == nil:
		return accessOK
	case apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "admission webhook"):
		return "" // not ours to try
	default:
		return apiMessage(err)
	}
}

// apiMessage is the API server's words in err, without the client's
// prefixes.
func apiMessage(err error) string {
	var se *apierrors.StatusError
	if errors.As(err, &se) && se.ErrStatus.Message != "" {
		return se.ErrStatus.Message
	}
	return err.Error()
}

// readBlocker names what blocks reading the target: the CRD's conversion,
// the APIService of its group, or, failing those, the error itself.
func (e *Explainer) readBlocker(ctx context.Context, t Target, err error, crd crdInfo, isCRD bool, access []VersionAccess) Finding {
	msg := apiMessage(err)
	ref := t.Ref()
	f := Finding{Cause: CauseReadFailed, Catalog: "F3", Severity: SeverityBlocker, Object: &ref}
	blocked := accessSummary(access)
	switch {
	case isCRD && invalidGroupVersion.MatchString(msg):
		e.storedVersionNotServed(&f, crd, invalidGroupVersion.FindStringSubmatch(msg)[1], msg)
	case isCRD && crd.Strategy == "Webhook" && strings.Contains(msg, "conversion webhook"):
		e.conversionFailing(ctx, &f, crd, msg)
	case e.ownStorageFailure(ctx, t, err, crd, isCRD):
		// F1 in the decoder's words (corrupt.go): no key, as the API
		// server names none without the feature gate.
		return corruptFinding(ref, t.GVR, "", cleantext.Clean(msg, maxSaid))
	default:
		if s, ok := e.apiServiceOf(ctx, t.GVR.GroupVersion()); ok {
			if af, unavailable := e.apiServiceFinding(ctx, s, ""); unavailable {
				af.Message = fmt.Sprintf("%s cannot be read: %s. %s", ref, msg, af.Message)
				af.Catalog = "F3"
				af.Message += "; " + blocked
				return af
			}
		}
		f.Message = fmt.Sprintf("%s cannot be read: %s", ref, msg)
		f.FixOwner = "cluster admin"
		f.Remedy = "read the error: it names what kube-apiserver could not do; explain cannot see past it"
		if apierrors.IsForbidden(err) {
			f.FixOwner = "you (explain reads with your credentials)"
			f.Remedy = fmt.Sprintf("run explain as someone who may get %s", resourceName(t.GVR))
		}
	}
	f.Message += "; " + blocked
	return f
}

// storedVersionNotServed: F3, objects stored at a version the CRD no
// longer lists (storedVersions pruned and the version dropped before the
// objects were rewritten).
func (e *Explainer) storedVersionNotServed(f *Finding, crd crdInfo, gv, msg string) {
	v := gv[strings.LastIndex(gv, "/")+1:]
	f.Cause = CauseStoredVersionNotServed
	listed := "no longer lists it"
	if slices.Contains(crd.Listed, v) {
		listed = "lists it but does not serve it"
	}
	f.Message = fmt.Sprintf("kube-apiserver cannot convert it: %q. It is stored at %s, and CRD %s %s (versions %v, storage %s, storedVersions %v), so no request reads it, writes it or removes its finalizers, and lists of %s fail",
		msg, gv, crd.Name, listed, crd.Listed, crd.Storage, crd.StoredVersions, crd.Plural)
	f.FixOwner = "the owner of CRD " + crd.Name
	f.Remedy = fmt.Sprintf("add version %s back to CRD %s with served: true (storage: false, with a schema that preserves unknown fields if the old one is gone), then rewrite or delete the objects stored at it; drop %s from status.storedVersions only once none is left", v, crd.Name, v)
	f.Leaks = "nothing: the object stays in etcd until it can be read again"
}

// conversionFailing: F3, the CRD's conversion webhook fails; where its
// backend is and why it fails.
func (e *Explainer) conversionFailing(ctx context.Context, f *Finding, crd crdInfo, msg string) {
	f.Cause = CauseConversionFailing
	backend := "URL " + crd.URL
	var why []string
	if crd.SvcName != "" {
		backend = fmt.Sprintf("Service %s/%s", crd.SvcNS, crd.SvcName)
		if ev, _ := e.serviceBackend(ctx, crd.SvcNS, crd.SvcName); ev != "" {
			why = append(why, ev)
		}
		if n, err := e.c.Namespace(ctx, crd.SvcNS); err != nil {
			why = append(why, fmt.Sprintf("namespace %s does not exist", crd.SvcNS))
		} else if n.DeletionTimestamp != nil {
			why = append(why, fmt.Sprintf("namespace %s is being deleted, and its content with it", crd.SvcNS))
		}
	}
	low := strings.ToLower(msg)
	var remedy string
	switch {
	case strings.Contains(low, "x509:") || strings.Contains(low, "tls:"):
		why = append(why, "the webhook's serving certificate is not trusted by the CRD's spec.conversion.webhook.clientConfig.caBundle")
		remedy = "put the CA that signed the webhook's serving certificate in the CRD's caBundle (cert-manager's cainjector does this when it runs), or reissue the certificate"
	case strings.Contains(low, "not found") || strings.Contains(low, "no such host") || strings.Contains(low, "connection refused") || strings.Contains(low, "no endpoints") || strings.Contains(low, "i/o timeout"):
		remedy = "reinstall the webhook's backend (usually the operator that owns the CRD), or, if the operator is gone for good, delete its objects while it is back"
	default:
		why = append(why, "the webhook answered, but not with a usable conversion")
		remedy = "fix the webhook (its logs say why it answered so); it is running"
	}
	f.Message = fmt.Sprintf("the conversion webhook of CRD %s (%s) fails: %q", crd.Name, backend, msg)
	if len(why) > 0 {
		f.Message += "; " + strings.Join(why, "; ")
	}
	f.Message += fmt.Sprintf(". Every request at a version other than the one an object is stored at goes through it (storage version %s, storedVersions %v)", crd.Storage, crd.StoredVersions)
	f.FixOwner = "the owner of CRD " + crd.Name + " (its operator)"
	f.Remedy = remedy + "; do not switch the CRD's conversion to None unless every served version has the same schema: kube-apiserver would hand out objects unconverted"
	f.Leaks = "nothing yet: a deletion that cannot read the object cannot run its cleanup either"
}

// apiServiceOf finds the APIService serving gv, if it is aggregated.
func (e *Explainer) apiServiceOf(ctx context.Context, gv schema.GroupVersion) (unstructured.Unstructured, bool) {
	for _, s := range e.c.APIServices(ctx) {
		if s.GetName() == gv.Version+"."+gv.Group {
			svc, _, _ := unstructured.NestedString(s.Object, "spec", "service", "name")
			return s, svc != ""
		}
	}
	return unstructured.Unstructured{}, false
}

// accessSummary says which of reading, writing and removing finalizers is
// blocked, and at which versions they work.
func accessSummary(access []VersionAccess) string {
	var reads, writes []string
	tried := false
	for _, a := range access {
		if a.Read == accessOK {
			reads = append(reads, a.Version)
		}
		if a.Write != "" {
			tried = true
		}
		if a.Write == accessOK {
			writes = append(writes, a.Version)
		}
	}
	var parts []string
	if len(reads) == 0 {
		parts = append(parts, "reading is blocked at every served version")
	} else {
		parts = append(parts, fmt.Sprintf("reading works at %s only", strings.Join(reads, ", ")))
	}
	switch {
	case !tried:
		parts = append(parts, "writing and removing finalizers were not checked")
	case len(writes) == 0:
		parts = append(parts, "writing, and so removing finalizers (by its owner or by hand), is blocked at every served version (server-side dry-run)")
	default:
		parts = append(parts, fmt.Sprintf("writing and removing finalizers work at %s (server-side dry-run)", strings.Join(writes, ", ")))
	}
	return strings.Join(parts, "; ")
}

// listBlocker explains a list of a namespace's content that failed because
// of its CRD's conversion: the namespace controller's list fails the same
// way, so this blocks the namespace's deletion.
func (e *Explainer) listBlocker(ctx context.Context, err error) (Finding, bool) {
	var le *kube.ListError
	if !errors.As(err, &le) {
		return Finding{}, false
	}
	crd, ok := crdFor(ctx, e.c, le.Res.GVR.Group, le.Res.GVR.Resource)
	if !ok {
		return Finding{}, false
	}
	msg := apiMessage(le.Err)
	ref := ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Resource: "customresourcedefinitions", Name: crd.Name}
	f := Finding{Catalog: "F3", Severity: SeverityBlocker, Object: &ref}
	switch {
	case invalidGroupVersion.MatchString(msg):
		e.storedVersionNotServed(&f, crd, invalidGroupVersion.FindStringSubmatch(msg)[1], msg)
	case crd.Strategy == "Webhook" && strings.Contains(msg, "conversion webhook"):
		e.conversionFailing(ctx, &f, crd, msg)
	default:
		return Finding{}, false
	}
	f.Message = fmt.Sprintf("listing %s fails, for explain and for the namespace controller: %s", resourceName(le.Res.GVR), f.Message)
	return f, true
}
