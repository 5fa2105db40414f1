/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Family 3: the instance that must act. Liveness judged per Deployment or
// DaemonSet says nothing when only one instance can remove a finalizer (the
// agent on the node the object names, the agent of the member cluster its
// namespace is named after, a zone's controller). When the object names
// where its remover runs, judge that place: does it exist, is it Ready, is
// its heartbeat fresh.

// PlaceKind is a kind of place a remover runs in.
type PlaceKind string

// Places.
const (
	PlaceNode    PlaceKind = "Node"
	PlaceCluster PlaceKind = "Cluster"
	PlaceZone    PlaceKind = "Zone"
)

// Place is where the object says its remover runs.
type Place struct {
	Kind PlaceKind
	Name string
	// Via is where the object names it: "status.nodeName",
	// "label topology.kubernetes.io/zone", "namespace karmada-es-member1".
	Via string
}

// State is what a place was found to be.
type State string

// States.
const (
	StateHealthy  State = "Healthy"
	StateMissing  State = "Missing"
	StateNotReady State = "NotReady"
	// StateStale: it says Ready, but its heartbeat is older than the
	// threshold: nobody has reported for it since.
	StateStale State = "HeartbeatStale"
	// StateUnknown: the place's kind was not read (not listed, or denied).
	StateUnknown State = "Unknown"
)

// PlaceVerdict is a place judged.
type PlaceVerdict struct {
	Place
	State State
	// Evidence says why: "Ready=Unknown (NodeStatusUnknown: Kubelet
	// stopped posting node status.) since 2h", "Lease renewed 12m ago".
	Evidence string
}

// String is "Node worker-2 (status.nodeName): NotReady, Ready=Unknown ...".
func (v PlaceVerdict) String() string {
	return fmt.Sprintf("%s %s (%s): %s, %s", v.Kind, v.Name, v.Via, v.State, v.Evidence)
}

// World is what ActorPlaces judges places against: objects the run already
// holds. A kind not listed leaves its places Unknown rather than Missing.
type World struct {
	Nodes       []*corev1.Node
	NodesListed bool
	// NodeLeases are kube-node-lease's Leases (the kubelets' heartbeats).
	NodeLeases []*coordinationv1.Lease
	// Clusters are the member-cluster objects of the multi-cluster
	// products installed (Karmada's Cluster, OCM's ManagedCluster...):
	// anything with a Ready or Available condition.
	Clusters       []*unstructured.Unstructured
	ClustersListed bool
	Now            time.Time
	// Stale is how old a heartbeat may be (zero: 5 minutes).
	Stale time.Duration
}

func (w World) stale() time.Duration {
	if w.Stale > 0 {
		return w.Stale
	}
	return 5 * time.Minute
}

// ActorPlaces finds the places obj names for its remover and judges each.
func ActorPlaces(obj *unstructured.Unstructured, w World) []PlaceVerdict {
	var out []PlaceVerdict
	for _, p := range Places(obj, w.Clusters) {
		out = append(out, w.Judge(p))
	}
	return out
}

// Places finds the nodes, member clusters and zones obj names: fields
// named after a node (nodeName, nodeID, node, targetNode; not a pod's
// hostname),
// labels and annotations keyed so (kubernetes.io/hostname, ...node-name),
// fields and labels naming one of clusters (the member clusters), the
// namespace when it is named after one of them ("itdove2",
// "karmada-es-member1"), zone labels. Each place once, first source kept.
func Places(obj *unstructured.Unstructured, clusters []*unstructured.Unstructured) []Place {
	var out []Place
	seen := map[string]bool{}
	known := map[string]bool{}
	for _, c := range clusters {
		known[c.GetName()] = true
	}
	add := func(k PlaceKind, name, via string) {
		if name == "" || seen[string(k)+"/"+name] {
			return
		}
		if k == PlaceCluster && !known[name] {
			// "cluster" is a common word for many kinds' own things (a
			// database cluster, a workload cluster's description): only a
			// member cluster that exists is a place.
			return
		}
		seen[string(k)+"/"+name] = true
		out = append(out, Place{Kind: k, Name: name, Via: via})
	}
	for _, section := range []string{"spec", "status"} {
		m, ok := obj.Object[section].(map[string]any)
		if !ok {
			continue
		}
		walk(m, section, func(f field) {
			if k, ok := placeKey(f.Key); ok {
				add(k, f.Value, f.Path)
			}
		})
	}
	for _, kv := range []struct {
		what string
		m    map[string]string
	}{{"label", obj.GetLabels()}, {"annotation", obj.GetAnnotations()}} {
		for _, key := range sortedKeys(kv.m) {
			_, name, _ := strings.Cut(key, "/")
			if name == "" {
				name = key
			}
			if key == "kubernetes.io/hostname" {
				add(PlaceNode, kv.m[key], kv.what+" "+key)
				continue
			}
			if k, ok := placeKey(name); ok {
				add(k, kv.m[key], kv.what+" "+key)
			}
		}
	}
	if ns := obj.GetNamespace(); ns != "" {
		for _, c := range clusters {
			if n := c.GetName(); ns == n || strings.HasSuffix(ns, "-"+n) {
				add(PlaceCluster, n, "namespace "+ns)
			}
		}
	}
	return out
}

// placeKey says whether a key names a place.
func placeKey(key string) (PlaceKind, bool) {
	k := lower(key)
	switch {
	case k == "nodename" || k == "node" || strings.HasSuffix(k, "nodename") || k == "nodeid" || k == "targetnode" || k == "sourcenode":
		return PlaceNode, true
	case k == "clustername" || k == "cluster" || k == "targetcluster" || k == "membercluster" || k == "managedcluster":
		return PlaceCluster, true
	case k == "zone" || strings.HasSuffix(k, "topologykubernetesiozone"):
		return PlaceZone, true
	}
	return "", false
}

// Judge judges p against w.
func (w World) Judge(p Place) PlaceVerdict {
	switch p.Kind {
	case PlaceNode:
		return w.judgeNode(p)
	case PlaceCluster:
		return w.judgeCluster(p)
	case PlaceZone:
		return w.judgeZone(p)
	}
	return PlaceVerdict{Place: p, State: StateUnknown, Evidence: "not a kind of place judged"}
}

func (w World) judgeNode(p Place) PlaceVerdict {
	v := PlaceVerdict{Place: p}
	var node *corev1.Node
	for _, n := range w.Nodes {
		if n.Name == p.Name {
			node = n
		}
	}
	if node == nil {
		if !w.NodesListed {
			v.State, v.Evidence = StateUnknown, "Nodes were not read"
			return v
		}
		v.State, v.Evidence = StateMissing, "no such Node"
		return v
	}
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		cond := condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message, Transition: c.LastTransitionTime.Time}
		if c.Status != corev1.ConditionTrue {
			v.State, v.Evidence = StateNotReady, cond.String()+w.since(cond.Transition)
			return v
		}
		for _, l := range w.NodeLeases {
			if l.Name != node.Name || l.Spec.RenewTime == nil {
				continue
			}
			if age := w.Now.Sub(l.Spec.RenewTime.Time); age > w.stale() {
				v.State, v.Evidence = StateStale, "Ready=True but its Lease was last renewed "+Age(age)+" ago"
				return v
			}
		}
		v.State, v.Evidence = StateHealthy, "Ready=True"
		return v
	}
	v.State, v.Evidence = StateNotReady, "no Ready condition"
	return v
}

func (w World) judgeCluster(p Place) PlaceVerdict {
	v := PlaceVerdict{Place: p}
	var cl *unstructured.Unstructured
	for _, c := range w.Clusters {
		if c.GetName() == p.Name {
			cl = c
		}
	}
	if cl == nil {
		if !w.ClustersListed {
			v.State, v.Evidence = StateUnknown, "member clusters were not read"
			return v
		}
		v.State, v.Evidence = StateMissing, "no such member cluster"
		return v
	}
	for _, c := range conditionsOf(cl) {
		t := lower(c.Type)
		if !strings.Contains(t, "ready") && !strings.Contains(t, "available") || strings.Contains(t, "not") {
			continue
		}
		if c.Status != "True" {
			v.State, v.Evidence = StateNotReady, cl.GetKind()+" "+c.String()+w.since(c.Transition)
			return v
		}
		if !c.Heartbeat.IsZero() && w.Now.Sub(c.Heartbeat) > w.stale() {
			v.State, v.Evidence = StateStale, cl.GetKind()+" "+c.String()+" last reported "+Age(w.Now.Sub(c.Heartbeat))+" ago"
			return v
		}
		v.State, v.Evidence = StateHealthy, cl.GetKind()+" "+c.Type+"=True"
		return v
	}
	v.State, v.Evidence = StateUnknown, cl.GetKind()+" reports no Ready or Available condition"
	return v
}

func (w World) judgeZone(p Place) PlaceVerdict {
	v := PlaceVerdict{Place: p}
	if !w.NodesListed {
		v.State, v.Evidence = StateUnknown, "Nodes were not read"
		return v
	}
	total, ready := 0, 0
	for _, n := range w.Nodes {
		if n.Labels[corev1.LabelTopologyZone] != p.Name {
			continue
		}
		total++
		if nv := w.judgeNode(Place{Kind: PlaceNode, Name: n.Name}); nv.State == StateHealthy {
			ready++
		}
	}
	switch {
	case total == 0:
		// A zone without Nodes may be a managed service's: its remover
		// can run elsewhere.
		v.State, v.Evidence = StateUnknown, "no Node in this zone"
	case ready == 0:
		v.State, v.Evidence = StateNotReady, fmt.Sprintf("none of its %d Nodes is Ready", total)
	default:
		v.State, v.Evidence = StateHealthy, fmt.Sprintf("%d of its %d Nodes Ready", ready, total)
	}
	return v
}

func (w World) since(t time.Time) string {
	if t.IsZero() || w.Now.Before(t) {
		return ""
	}
	return " for " + Age(w.Now.Sub(t))
}

// Age is a duration as people say it: "45s", "12m", "1h30m", "2d".
func Age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		if m := int(d.Minutes()) % 60; m != 0 {
			return fmt.Sprintf("%dh%dm", int(d.Hours()), m)
		}
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
