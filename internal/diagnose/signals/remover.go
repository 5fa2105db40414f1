/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package signals

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// Family 4: the remover identified by what runs, not by name. A field
// manager's name is a binary's name: it matches a workload's command or
// args, its image, its container's name, and more loosely its name, labels
// and ServiceAccount. When several workloads run the same binary (many
// controllers are built as "manager"), what each one's ServiceAccount may
// patch in the finalizer's API group tells them apart. A running remover
// must never be called missing; a strip is never offered because the
// matching is weak.

// Confidence is how sure a match is.
type Confidence string

// Confidences.
const (
	// ConfidenceCertain: the binary or image is the writer's, and its
	// ServiceAccount may patch the finalizer's group (or the group was not
	// asked about), and no other workload matches as well.
	ConfidenceCertain Confidence = "certain"
	// ConfidenceLikely: one workload matches best, on looser signals.
	ConfidenceLikely Confidence = "likely"
	// ConfidenceAmbiguous: several workloads match equally.
	ConfidenceAmbiguous Confidence = "ambiguous"
)

// Container is what runs in a workload's pods.
type Container struct {
	Name, Image   string
	Command, Args []string
}

// Workload is a Deployment, DaemonSet or StatefulSet as MatchRemover reads it.
type Workload struct {
	Ref            Ref
	Labels         map[string]string
	ServiceAccount string
	Containers     []Container
}

// WorkloadOf reads a pod template's owner.
func WorkloadOf(ref Ref, labels map[string]string, spec corev1.PodSpec) Workload {
	w := Workload{Ref: ref, Labels: labels, ServiceAccount: spec.ServiceAccountName}
	if w.ServiceAccount == "" {
		w.ServiceAccount = "default"
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		w.Containers = append(w.Containers, Container{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args})
	}
	return w
}

// DeploymentWorkload reads a Deployment.
func DeploymentWorkload(d *appsv1.Deployment) Workload {
	return WorkloadOf(Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: d.Namespace, Name: d.Name}, d.Labels, d.Spec.Template.Spec)
}

// Rights says whether the ServiceAccount namespace/name may patch objects of
// group; known is false when that could not be asked.
type Rights func(namespace, serviceAccount, group string) (allowed, known bool)

// Match is a workload considered as the remover.
type Match struct {
	Workload   Workload
	Score      int
	Confidence Confidence
	// Why lists the signals, strongest first: "command /manager",
	// "its ServiceAccount may patch infrastructure.cluster.x-k8s.io".
	Why []string
}

// Signal strengths of a match.
const (
	scoreBinary = 3 // command or args: the binary that wrote
	scoreImage  = 2 // image or container name
	scoreLoose  = 1 // workload name, label value, ServiceAccount name
	scoreRights = 2 // its ServiceAccount may patch the group
)

// genericManagers are field managers that name a client library or a
// tool, not a controller (compared folded).
var genericManagers = map[string]bool{
	"kubectl": true, "kubectlclientsideapply": true, "kubectledit": true, "kubectlpatch": true, "kubectlcreate": true,
	"kubectlreplace": true, "kubectllabel": true, "kubectlannotate": true, "kubectlset": true, "kubectlteardown": true,
	"beforefirstapply": true, "gohttpclient": true, "unknown": true, "k9s": true, "mozilla": true, "lens": true, "curl": true, "helm": true,
}

// GenericManager says whether a field manager names a client (kubectl, a
// browser, curl, a Go test binary, client-go's default) rather than a
// controller: it identifies no remover.
func GenericManager(m string) bool {
	low := strings.ToLower(m)
	return genericManagers[lower(m)] || strings.HasPrefix(low, "kubectl-") || strings.HasPrefix(low, "mozilla/") ||
		strings.HasPrefix(low, "curl/") || strings.HasSuffix(low, ".test")
}

// MatchRemover scores workloads as the remover of a finalizer written by
// manager, in API group group ("" when unknown), best first; workloads that
// match nothing are left out, and so are those whose ServiceAccount may not
// patch the group when that is known. may may be nil.
func MatchRemover(manager, group string, workloads []Workload, may Rights) []Match {
	m := lower(manager)
	if m == "" || GenericManager(manager) {
		return nil
	}
	var out []Match
	for _, w := range workloads {
		mt := Match{Workload: w}
		mt.score(m)
		if mt.Score == 0 {
			continue
		}
		if group != "" && may != nil {
			allowed, known := may(w.Ref.Namespace, w.ServiceAccount, group)
			switch {
			case known && !allowed:
				continue
			case known:
				mt.Score += scoreRights
				mt.Why = append(mt.Why, fmt.Sprintf("its ServiceAccount %s may patch %s", w.ServiceAccount, group))
			}
		}
		out = append(out, mt)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Workload.Ref.String() < out[j].Workload.Ref.String()
	})
	tied := len(out) > 1 && out[1].Score == out[0].Score
	for i := range out {
		switch {
		case tied && out[i].Score == out[0].Score:
			out[i].Confidence = ConfidenceAmbiguous
		case i == 0 && out[0].strong() && (group == "" || may == nil || out[0].hasRights()):
			out[i].Confidence = ConfidenceCertain
		default:
			out[i].Confidence = ConfidenceLikely
		}
	}
	return out
}

// score adds the signals of one workload.
func (mt *Match) score(folded string) {
	var binary, image, loose []string
	for _, c := range mt.Workload.Containers {
		for i, a := range append(append([]string{}, c.Command...), c.Args...) {
			if i > 0 && strings.HasPrefix(a, "-") {
				continue
			}
			if lower(path.Base(a)) == folded {
				binary = append(binary, fmt.Sprintf("container %s runs %s", c.Name, a))
				break
			}
		}
		if img := imageName(c.Image); img != "" && (lower(img) == folded || len(folded) >= 4 && strings.Contains(lower(img), folded) || len(img) >= 4 && strings.Contains(folded, lower(img))) {
			image = append(image, fmt.Sprintf("container %s's image %s", c.Name, c.Image))
		} else if lower(c.Name) == folded {
			image = append(image, "container "+c.Name)
		}
	}
	if lower(mt.Workload.Ref.Name) == folded || strings.Contains(lower(mt.Workload.Ref.Name), folded) && len(folded) >= 4 {
		loose = append(loose, "its name")
	}
	for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/component", "app.kubernetes.io/instance", "app", "component", "control-plane"} {
		if v := mt.Workload.Labels[k]; v != "" && lower(v) == folded {
			loose = append(loose, "label "+k+"="+v)
		}
	}
	if lower(mt.Workload.ServiceAccount) == folded {
		loose = append(loose, "ServiceAccount "+mt.Workload.ServiceAccount)
	}
	switch {
	case len(binary) > 0:
		mt.Score += scoreBinary
	case len(image) > 0:
		mt.Score += scoreImage
	}
	if len(loose) > 0 {
		mt.Score += scoreLoose
	}
	mt.Why = append(append(append(mt.Why, binary...), image...), loose...)
}

func (mt Match) strong() bool {
	return mt.Score >= scoreImage && len(mt.Why) > 0 && !strings.HasPrefix(mt.Why[0], "its ")
}

func (mt Match) hasRights() bool {
	for _, w := range mt.Why {
		if strings.Contains(w, " may patch ") {
			return true
		}
	}
	return false
}

// imageName is an image's repository's last segment, without tag or digest.
func imageName(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, "/"); i >= 0 {
		image = image[i+1:]
	}
	if i := strings.Index(image, ":"); i >= 0 {
		image = image[:i]
	}
	return image
}

// LeaseVerdict is a leader-election Lease a workload holds.
type LeaseVerdict struct {
	Lease  Ref
	Holder string
	// Pod is the holder's pod, from its identity.
	Pod string
	// Renewed is how long ago it was last renewed; NeverRenewed when it
	// has no renew time.
	Renewed      time.Duration
	NeverRenewed bool
	// Duration is its lease duration (15s when it says none).
	Duration time.Duration
	// Expired: not renewed within its duration.
	Expired bool
}

// String is "Lease capi-system/controller-leader-elect-capa held by ..., renewed 5s ago".
func (l LeaseVerdict) String() string {
	s := fmt.Sprintf("%s held by %s, renewed %s ago", l.Lease, l.Holder, Age(l.Renewed))
	if l.NeverRenewed {
		s = fmt.Sprintf("%s held by %s, never renewed", l.Lease, l.Holder)
	}
	if l.Expired {
		s += " (expired)"
	}
	return s
}

// LeasesOf finds the Leases w leads, wherever they are named: their holder
// is one of w's pods (controller-runtime and client-go write
// "<pod>_<uuid>" or the pod's name), in w's namespace. A Lease named after
// the component rather than the binary is found by its holder. now is the
// API server's clock, which wrote the renew times.
func LeasesOf(w Workload, leases []*coordinationv1.Lease, now time.Time) []LeaseVerdict {
	var out []LeaseVerdict
	for _, l := range leases {
		if l.Namespace != w.Ref.Namespace || l.Spec.HolderIdentity == nil {
			continue
		}
		holder := *l.Spec.HolderIdentity
		pod, _, _ := strings.Cut(holder, "_")
		if !strings.HasPrefix(pod, w.Ref.Name+"-") {
			continue
		}
		v := LeaseVerdict{Lease: Ref{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: l.Namespace, Name: l.Name},
			Holder: holder, Pod: pod, Duration: 15 * time.Second}
		if l.Spec.LeaseDurationSeconds != nil {
			v.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		if l.Spec.RenewTime != nil {
			v.Renewed = now.Sub(l.Spec.RenewTime.Time)
			v.Expired = v.Renewed > v.Duration
		} else {
			v.NeverRenewed, v.Expired = true, true
		}
		out = append(out, v)
	}
	return out
}
