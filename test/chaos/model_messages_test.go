/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chaos_test

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
)

// The run's namespaced objects have names no message would contain by
// chance: cm-<run>-<n> (ConfigMaps) and tp-<run>-<n> (TeardownPolicies).
var modelNameRE = regexp.MustCompile(`\b(cm|tp)-r[0-9]+-[0-9]+\b`)

// checkMessages: what a tenant of namespace N reads (Events in N, progress
// annotations on N's objects, the status of N's TeardownPolicies) names no
// object of another namespace, nor another of the run's namespaces.
func (c *checker) checkMessages() {
	owner := map[string]string{}
	for _, o := range c.h.objs {
		owner[o.Name] = o.NS
	}
	for _, p := range c.h.pols {
		if p.Kind == "TeardownPolicy" {
			owner[p.Name] = p.NS
		}
	}
	reported := map[string]bool{}
	check := func(ns, where, text string) {
		var named []string
		for _, tok := range modelNameRE.FindAllString(text, -1) {
			if on, ok := owner[tok]; ok && on != ns {
				named = append(named, tok+" (of "+on+")")
			}
		}
		for _, other := range c.facts.Namespaces {
			if other != ns && regexp.MustCompile(`\b`+regexp.QuoteMeta(other)+`\b`).MatchString(text) {
				named = append(named, "namespace "+other)
			}
		}
		if len(named) == 0 || reported[where+"\x00"+text] {
			return
		}
		reported[where+"\x00"+text] = true
		c.violate("message-names-another-namespace", "%s in %s names %s: %q", where, ns, strings.Join(named, ", "), text)
	}
	for _, r := range c.h.evts {
		e := r.Obj.(*corev1.Event)
		where := fmt.Sprintf("Event %s on %s %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name)
		if e.InvolvedObject.Namespace != "" && e.InvolvedObject.Namespace != e.Namespace {
			c.violate("message-names-another-namespace", "%s in %s is about an object of %s", where, e.Namespace, e.InvolvedObject.Namespace)
		}
		check(e.Namespace, where, e.Message)
	}
	for _, o := range c.h.objs {
		for _, s := range o.States {
			for k, v := range s.CM.Annotations {
				if strings.HasPrefix(k, "progress.finalizer.teardown.dev/") && !c.facts.TenantWrites[s.CM.ResourceVersion] {
					check(o.NS, "annotation "+k+" on "+o.Name, v)
				}
			}
		}
	}
	for _, p := range c.h.pols {
		if p.Kind != "TeardownPolicy" {
			continue
		}
		for _, s := range p.States {
			where := "status of TeardownPolicy " + p.Name
			for _, cond := range s.Status.Conditions {
				check(p.NS, where+" condition "+cond.Type, cond.Message)
			}
			for _, b := range s.Status.BlockedObjects {
				checkRef(c, p.NS, where+" blockedObjects", b.Object)
				check(p.NS, where+" blockedObjects", b.Message)
				if b.Diagnosis != nil {
					check(p.NS, where+" diagnosis", b.Diagnosis.Message)
				}
			}
			for _, f := range s.Status.RecentFailures {
				checkRef(c, p.NS, where+" recentFailures", f.Object)
				check(p.NS, where+" recentFailures", f.Message)
			}
		}
	}
}

func checkRef(c *checker, ns, where string, ref teardownv1alpha1.ObjectReference) {
	if ref.Namespace != "" && ref.Namespace != ns {
		c.violate("message-names-another-namespace", "%s in %s names %s %s/%s", where, ns, ref.Kind, ref.Namespace, ref.Name)
	}
}
