/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugin

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// ownerRBAC: B4. Once the owner's workload is found, a SubjectAccessReview
// asks whether its ServiceAccount may patch or update the object at all. A
// running owner without that right is the root blocker; a stopped one would
// still be stuck once restarted, which is worth a warning. Nothing is
// reported when the check cannot be made (no right to create
// SubjectAccessReviews: a read-only user).
func (e *explainer) ownerRBAC(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	o := fd.Owner
	if o == nil || o.ServiceAccount == "" || fd.Cause == CauseOrphanFinalizer {
		return
	}
	saNS, saName, _ := strings.Cut(o.ServiceAccount, "/")
	allowed, denied, ok := e.serviceAccountMay(ctx, saNS, saName, gvr, obj.GetNamespace(), obj.GetName(), "patch", "update")
	if !ok {
		return
	}
	if allowed {
		o.Evidence = append(o.Evidence, fmt.Sprintf("SubjectAccessReview: ServiceAccount %s may patch %s", o.ServiceAccount, resourceName(gvr)))
		return
	}
	grant := rbacGrant(saNS, saName, gvr, obj.GetNamespace())
	msg := fmt.Sprintf("its ServiceAccount %s may not patch or update %s %s (SubjectAccessReview: %s)",
		o.ServiceAccount, resourceName(gvr), joinNS(obj.GetNamespace(), obj.GetName()), denied)
	o.Evidence = append(o.Evidence, fmt.Sprintf("SubjectAccessReview: ServiceAccount %s may not patch or update %s %s",
		o.ServiceAccount, resourceName(gvr), joinNS(obj.GetNamespace(), obj.GetName())))
	leaks := fd.Leaks
	if leaks == "" {
		leaks = "whatever " + o.Component + " cleans up outside this object (unknown to Teardown)"
	}
	if o.State == OwnerAlive {
		fd.Cause, fd.Catalog, fd.Severity = CauseOwnerLacksRBAC, "B4", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and is running, but cannot remove it: %s", o.Component, fd.Finalizer, msg)
		fd.FixOwner = "operator packaging (its RBAC); cluster admin"
		fd.Remedy = fmt.Sprintf("grant the owner the right to write the object, then it removes the finalizer itself: %s; or fix the RBAC its chart or bundle ships", grant)
		fd.Leaks = leaks
		return
	}
	fd.Children = append(fd.Children, Finding{Cause: CauseOwnerLacksRBAC, Catalog: "B4", Severity: SeverityWarning, Object: fd.Object, Finalizer: fd.Finalizer,
		Message:  "even once running again it could not remove the finalizer: " + msg,
		FixOwner: "operator packaging (its RBAC); cluster admin",
		Remedy:   grant,
		Leaks:    leaks})
}

// serviceAccountMay asks, with one SubjectAccessReview per verb, whether a
// ServiceAccount may do any of verbs on the object. ok is false when the
// question could not be asked.
func (e *explainer) serviceAccountMay(ctx context.Context, saNS, saName string, gvr schema.GroupVersionResource, ns, name string, verbs ...string) (allowed bool, denied string, ok bool) {
	var reasons []string
	for _, verb := range verbs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + saNS + ":" + saName,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gvr.Group, Version: gvr.Version,
				Resource: gvr.Resource, Namespace: ns, Name: name},
		}}
		got, err := e.c.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return false, "", false
		}
		if got.Status.Allowed {
			return true, "", true
		}
		r := verb + " denied"
		if got.Status.Reason != "" {
			r += ": " + got.Status.Reason
		}
		if got.Status.EvaluationError != "" {
			r += " (" + got.Status.EvaluationError + ")"
		}
		reasons = append(reasons, r)
	}
	return false, strings.Join(reasons, "; "), true
}

// resourceName is resource.group, as RBAC rules and kubectl name it.
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

// rbacGrant is the kubectl command granting patch and update on a resource
// to a ServiceAccount: a Role in ns, or a ClusterRole for cluster-scoped
// objects.
func rbacGrant(saNS, saName string, gvr schema.GroupVersionResource, ns string) string {
	if saName == "default" {
		// Granting the namespace's default ServiceAccount grants every pod
		// that does not name one.
		return fmt.Sprintf("give the owner a ServiceAccount of its own (it runs as %s/default, shared by every pod there that names none), then grant that one patch and update on %s", saNS, resourceName(gvr))
	}
	name := saName + "-finalizers"
	if ns == "" {
		return fmt.Sprintf("kubectl create clusterrole %s --verb=patch,update --resource=%s && kubectl create clusterrolebinding %s --clusterrole=%s --serviceaccount=%s:%s",
			name, resourceName(gvr), name, name, saNS, saName)
	}
	return fmt.Sprintf("kubectl create role %s -n %s --verb=patch,update --resource=%s && kubectl create rolebinding %s -n %s --role=%s --serviceaccount=%s:%s",
		name, ns, resourceName(gvr), name, ns, name, saNS, saName)
}

// warningEvents returns the newest Warning events about obj from one of
// the components named (all when none is), newest first, as "reason:
// message (component, ×count)". Naming the owner's components keeps other
// controllers' warnings about the object (the API server's own repair loops,
// say) from being read as the owner's complaint.
func (e *explainer) warningEvents(ctx context.Context, obj metav1.Object, max int, components ...string) []string {
	l, err := e.c.kube.CoreV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.uid=" + string(obj.GetUID()) + ",type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil
	}
	evs := l.Items
	last := func(ev *corev1.Event) time.Time {
		switch {
		case !ev.LastTimestamp.IsZero():
			return ev.LastTimestamp.Time
		case ev.Series != nil:
			return ev.Series.LastObservedTime.Time
		case !ev.EventTime.IsZero():
			return ev.EventTime.Time
		}
		return ev.CreationTimestamp.Time
	}
	sort.SliceStable(evs, func(i, j int) bool { return last(&evs[i]).After(last(&evs[j])) })
	var out []string
	for i := range evs {
		if len(out) == max {
			break
		}
		ev := &evs[i]
		from := ev.Source.Component
		if from == "" {
			from = ev.ReportingController
		}
		if len(components) > 0 && !slices.Contains(components, from) {
			continue
		}
		s := fmt.Sprintf("%s: %s", ev.Reason, strings.TrimSpace(ev.Message))
		if from != "" {
			s += " (" + from
			if ev.Count > 1 {
				s += fmt.Sprintf(", ×%d", ev.Count)
			}
			s += ")"
		}
		out = append(out, s)
	}
	return out
}

// loadBalancerCleanup: C7. The cloud-controller-manager's service controller
// removes service.kubernetes.io/load-balancer-cleanup once it has deleted the
// Service's cloud load balancer. It runs as a workload (or a static pod)
// with a leader-election Lease on self-managed clusters, and out of sight on
// managed ones.
func (e *explainer) loadBalancerCleanup(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC {
		return
	}
	svc, err := e.c.kube.CoreV1().Services(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return
	}
	var addrs []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			addrs = append(addrs, in.IP)
		}
		if in.Hostname != "" {
			addrs = append(addrs, in.Hostname)
		}
	}
	lb := "no load balancer address was ever recorded in its status"
	fd.Leaks = "probably nothing, since no address was recorded; but a load balancer still being provisioned is left in the cloud: check the cloud console"
	if len(addrs) > 0 {
		lb = "its load balancer is " + strings.Join(addrs, ", ")
		fd.Leaks = fmt.Sprintf("the cloud load balancer (%s) and what comes with it (forwarding rules, target groups, security group rules), billed until deleted by hand", strings.Join(addrs, ", "))
	}
	fd.Cause, fd.Catalog = CauseLoadBalancerCleanup, "C7"
	fd.FixOwner = "cluster operator (cloud-controller-manager); cloud admin (credentials, quotas)"
	fd.Remedy = "fix the cloud-controller-manager (or reinstall it) and its cloud credentials; it then deletes the load balancer and removes the finalizer; release only after deleting the load balancer in the cloud yourself"
	owner := "the cloud-controller-manager's state is unknown"
	switch {
	case fd.Owner == nil:
	case fd.Owner.State == OwnerAlive:
		owner = fmt.Sprintf("the cloud-controller-manager runs (%s)", lastEvidence(fd.Owner))
	case fd.Owner.State == OwnerMissing:
		owner = "no cloud-controller-manager workload or Lease was found: on a self-managed cluster nothing will delete the load balancer (managed clusters run it out of sight: ask the provider)"
	case fd.Owner.State == OwnerDown:
		owner = fmt.Sprintf("the cloud-controller-manager does not look alive (%s)", lastEvidence(fd.Owner))
	}
	fd.Message = fmt.Sprintf("the service controller (cloud-controller-manager) removes this finalizer after deleting the Service's cloud load balancer (type %s; %s); %s", svc.Spec.Type, lb, owner)
	fd.Severity = SeverityBlocker
	// The cloud-controller-manager's service controller reports as
	// "service-controller".
	if evs := e.warningEvents(ctx, obj, 3, "service-controller"); len(evs) > 0 {
		fd.Message += "; warning events: " + strings.Join(evs, "; ")
	} else if fd.Owner != nil && fd.Owner.State == OwnerAlive {
		fd.Severity = SeverityWaiting
	}
}

// lastEvidence is the newest evidence about the owner's workload.
func lastEvidence(o *Owner) string {
	for i := len(o.Evidence) - 1; i >= 0; i-- {
		if !strings.HasPrefix(o.Evidence[i], "SubjectAccessReview:") {
			return o.Evidence[i]
		}
	}
	return "no evidence"
}

// controllerManager judges kube-controller-manager from its leader-election
// Lease (kube-system/kube-controller-manager), the only liveness signal the
// API gives for built-in controllers, read once per run: alive while it
// renews, down once it is older than its lease duration, missing when it is
// gone where the control plane elects leaders, unknown otherwise (leader
// election off, a managed control plane that hides it, unreadable).
func (e *explainer) controllerManager(ctx context.Context) (state, evidence string) {
	l := e.kcmLiveness(ctx)
	return l.ownerState(), l.Evidence
}

// kcmLiveness is kube-controller-manager's liveness, read once per run.
func (e *explainer) kcmLiveness(ctx context.Context) ControllerLiveness {
	e.doOnce("kcm", func() {
		l := e.c.controllerLiveness(ctx, e.now)
		e.mu.Lock()
		e.kcm = l
		e.mu.Unlock()
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.kcm
}

// builtInOwner is the Owner of a finalizer removed by a controller of
// kube-controller-manager, judged by its Lease.
func (e *explainer) builtInOwner(ctx context.Context, component string) *Owner {
	state, ev := e.controllerManager(ctx)
	return &Owner{Component: component, Source: SourceCatalog, State: state, Evidence: []string{ev}}
}

// jobTracking: C8. The Job controller removes batch.kubernetes.io/job-tracking
// once it has counted the finished (or deleted) pod in its Job's status; it
// also removes it from pods whose Job is gone.
func (e *explainer) jobTracking(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseJobTrackingPending, "C8"
	fd.Owner = e.builtInOwner(ctx, "Job controller (kube-controller-manager)")
	fd.FixOwner = "cluster operator (kube-controller-manager's Job controller)"
	release := fmt.Sprintf("kubectl teardown release pod/%s -n %s --finalizer %s --reason '...'", obj.GetName(), obj.GetNamespace(), fd.Finalizer)
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	phase := "unknown"
	if pod, err := e.c.kube.CoreV1().Pods(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{}); err == nil {
		phase = string(pod.Status.Phase)
	}
	var jobRef *metav1.OwnerReference
	for _, r := range obj.GetOwnerReferences() {
		if r.Kind == "Job" && strings.HasPrefix(r.APIVersion, "batch/") && r.Controller != nil && *r.Controller {
			r := r
			jobRef = &r
		}
	}
	stalled := func(what string) {
		fd.Severity = SeverityWaiting
		fd.Message = fmt.Sprintf("%s (pod phase %s, deleting for %s)", what, phase, age(since))
		fd.Remedy = "wait; if it does not go, check kube-controller-manager's Job controller and webhooks on pod updates"
		if since > gcGrace || fd.Owner.State == OwnerDown {
			fd.Severity = SeverityBlocker
			fd.Message = fmt.Sprintf("%s, but it has not for %s (pod phase %s; %s): the Job controller is down or cannot update the pod", what, age(since), phase, fd.Owner.Evidence[0])
			fd.Remedy = "fix kube-controller-manager's Job controller (or the webhook rejecting pod updates, see the dry-run); for a finished Job only its accounting is at stake, so releasing is low risk: " + release
		}
	}
	if jobRef == nil {
		stalled("the pod has no owning Job; the Job controller removes the finalizer of such pods")
		return
	}
	job, err := e.c.kube.BatchV1().Jobs(obj.GetNamespace()).Get(ctx, jobRef.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || (err == nil && job.UID != jobRef.UID):
		stalled(fmt.Sprintf("its Job %s is gone; the Job controller removes the finalizer of orphaned pods", jobRef.Name))
		return
	case err != nil:
		stalled(fmt.Sprintf("Job %s could not be read (%v); the Job controller removes the finalizer once it has counted the pod", jobRef.Name, err))
		return
	}
	counted := false
	if u := job.Status.UncountedTerminatedPods; u != nil {
		for _, uid := range append(append([]types.UID{}, u.Succeeded...), u.Failed...) {
			if uid == obj.GetUID() {
				counted = true
			}
		}
	}
	if job.Status.StartTime == nil && len(job.Status.Conditions) == 0 && !counted {
		// The Job controller stamps startTime (or a Suspended condition) on
		// its first sync, before any pod of the Job can finish.
		fd.Severity = SeverityBlocker
		fd.Owner.State = OwnerDown
		fd.Owner.Evidence = append(fd.Owner.Evidence, fmt.Sprintf("Job %s has no startTime and no condition: the Job controller never synced it", job.Name))
		fd.Message = fmt.Sprintf("the Job controller has never synced Job %s (no startTime, no condition), so it will not count this pod (phase %s) or remove the finalizer: it is not running", job.Name, phase)
		fd.Remedy = "run kube-controller-manager with the Job controller (check its --controllers flag); for a finished Job only its accounting is at stake, so releasing is low risk: " + release
		return
	}
	if counted {
		stalled(fmt.Sprintf("Job %s has counted the pod (status.uncountedTerminatedPods); the Job controller removes the finalizer next", job.Name))
		return
	}
	stalled(fmt.Sprintf("Job %s has not counted the pod yet; the Job controller removes the finalizer once it has", job.Name))
}

// serviceCIDR: C10. The ServiceCIDR controller removes its finalizer once no
// IPAddress in the range is left that another ServiceCIDR does not cover.
func (e *explainer) serviceCIDR(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseServiceCIDRInUse, "C10"
	fd.Owner = e.builtInOwner(ctx, "ServiceCIDR controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the Services still using the range; cluster admin"
	net := e.c.kube.NetworkingV1()
	sc, err := net.ServiceCIDRs().Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		fd.Message = "could not read the ServiceCIDR: " + err.Error()
		return
	}
	mine := parsePrefixes(sc.Spec.CIDRs)
	// Other ServiceCIDRs that stay keep the addresses they also cover.
	var others []netip.Prefix
	if l, err := net.ServiceCIDRs().List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			if o.UID != sc.UID && o.DeletionTimestamp == nil {
				others = append(others, parsePrefixes(o.Spec.CIDRs)...)
			}
		}
	}
	cond := ""
	for _, c := range sc.Status.Conditions {
		if c.Type == "Ready" && c.Status != metav1.ConditionTrue {
			cond = fmt.Sprintf(" (condition Ready=%s %s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	ips, err := net.IPAddresses().List(ctx, metav1.ListOptions{})
	if err != nil {
		fd.Message = "could not list IPAddresses: " + err.Error() + cond
		return
	}
	for _, ip := range ips.Items {
		addr, err := netip.ParseAddr(ip.Name)
		if err != nil || !prefixesContain(mine, addr) || prefixesContain(others, addr) {
			continue
		}
		ref := ObjectRef{APIVersion: "networking.k8s.io/v1", Kind: "IPAddress", Resource: "ipaddresses", Name: ip.Name, UID: string(ip.UID)}
		user, remedy := "an unknown object", "delete the object that holds the address, or add a ServiceCIDR that covers "+ip.Name
		if p := ip.Spec.ParentRef; p != nil {
			user = fmt.Sprintf("%s %s", strings.TrimSuffix(p.Resource+"."+p.Group, "."), joinNS(p.Namespace, p.Name))
			if p.Group == "" && p.Resource == "services" {
				user = "Service " + joinNS(p.Namespace, p.Name)
				remedy = fmt.Sprintf("delete Service %s (kubectl delete service %s -n %s), or add a ServiceCIDR that covers %s", joinNS(p.Namespace, p.Name), p.Name, p.Namespace, ip.Name)
			}
		}
		if len(fd.Children) == maxChildren {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: "more addresses not shown"})
			break
		}
		fd.Children = append(fd.Children, Finding{Cause: CauseIPAddressAllocated, Catalog: "C10", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s is allocated to %s and no other ServiceCIDR covers it", ip.Name, user),
			FixOwner: "the owner of " + user, Remedy: remedy,
			Leaks: "the Service keeps a ClusterIP outside every ServiceCIDR"})
	}
	if n := len(fd.Children); n > 0 {
		fd.Message = fmt.Sprintf("%d IP address(es) in %s are still allocated and no other ServiceCIDR covers them; the ServiceCIDR controller removes the finalizer once they are released%s",
			n, strings.Join(sc.Spec.CIDRs, ", "), cond)
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("no address of %s is allocated any more; the ServiceCIDR controller should remove the finalizer (deleting for %s; %s)%s", strings.Join(sc.Spec.CIDRs, ", "), age(since), fd.Owner.Evidence[0], cond)
	if since > gcGrace || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its ServiceCIDR controller; with no address left in the range, releasing the finalizer leaks nothing"
		fd.Leaks = "nothing: no address is allocated from the range"
	}
}

func parsePrefixes(cidrs []string) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func prefixesContain(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// vacProtection: C11. The vac-protection controller removes its finalizer once
// no PV (spec) and no PVC (spec, status.currentVolumeAttributesClassName,
// status.modifyVolumeStatus.targetVolumeAttributesClassName) names the class.
func (e *explainer) vacProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseVACInUse, "C11"
	fd.Owner = e.builtInOwner(ctx, "vac-protection controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the claims and volumes that use the class"
	name := obj.GetName()
	users := 0
	add := func(ref ObjectRef, where, remedy string) {
		users++
		if users == maxChildren+1 {
			fd.Children = append(fd.Children, Finding{Cause: "More", Severity: SeverityInfo, Message: "more references not shown"})
		}
		if users > maxChildren {
			return
		}
		fd.Children = append(fd.Children, Finding{Cause: CauseVACInUse, Catalog: "C11", Severity: SeverityBlocker, Object: &ref,
			Message: fmt.Sprintf("%s names the class in %s", ref, where), FixOwner: "the owner of " + ref.String(), Remedy: remedy})
	}
	core := e.c.kube.CoreV1()
	pvcs, err := core.PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		fd.Message = "could not list PersistentVolumeClaims: " + err.Error()
		return
	}
	for _, c := range pvcs.Items {
		var where []string
		if c.Spec.VolumeAttributesClassName != nil && *c.Spec.VolumeAttributesClassName == name {
			where = append(where, "spec.volumeAttributesClassName")
		}
		if c.Status.CurrentVolumeAttributesClassName != nil && *c.Status.CurrentVolumeAttributesClassName == name {
			where = append(where, "status.currentVolumeAttributesClassName")
		}
		if m := c.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName == name {
			where = append(where, "status.modifyVolumeStatus (a modification in progress)")
		}
		if len(where) == 0 {
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID)}
		add(ref, strings.Join(where, ", "), fmt.Sprintf("point the claim at another class (kubectl patch pvc %s -n %s --type merge -p '{\"spec\":{\"volumeAttributesClassName\":\"OTHER\"}}') and let the modification finish, or delete the claim", c.Name, c.Namespace))
	}
	if pvs, err := core.PersistentVolumes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, v := range pvs.Items {
			if v.Spec.VolumeAttributesClassName != nil && *v.Spec.VolumeAttributesClassName == name {
				ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolume", Resource: "persistentvolumes", Name: v.Name, UID: string(v.UID)}
				add(ref, "spec.volumeAttributesClassName", "change its claim's class (the volume follows once modified), or delete the volume")
			}
		}
	}
	if users > 0 {
		fd.Message = fmt.Sprintf("%d claim(s) or volume(s) still use VolumeAttributesClass %s; the vac-protection controller removes the finalizer once none does", users, name)
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	fd.Message = fmt.Sprintf("no claim or volume uses the class any more; the vac-protection controller should remove the finalizer (deleting for %s; %s)", age(since), fd.Owner.Evidence[0])
	if since > gcGrace || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its vac-protection controller; with nothing using the class, releasing the finalizer leaks nothing"
		fd.Leaks = "nothing: no claim or volume uses the class"
	}
}

// nodeDrain: D5. A Node's own finalizer (Karpenter, Cluster API, ...) is
// removed once its controller has drained the node and terminated the
// instance. The drain stops at pods whose PodDisruptionBudget allows no
// disruption. With the owner gone, the owner is the root blocker and the
// budgets are only a warning of what comes next.
func (e *explainer) nodeDrain(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	pods, err := e.c.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + obj.GetName()})
	if err != nil {
		return
	}
	var drained []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || isDaemonPod(&p) {
			continue
		}
		drained = append(drained, p)
	}
	if len(drained) == 0 {
		return
	}
	gone := ownerGone(fd)
	pdbs, err := e.c.kube.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	blocked := 0
	for i := range pdbs.Items {
		b := &pdbs.Items[i]
		if b.Status.DisruptionsAllowed > 0 || b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		var covered []string
		for _, p := range drained {
			if p.Namespace == b.Namespace && sel.Matches(labels.Set(p.Labels)) {
				covered = append(covered, p.Name)
			}
		}
		if len(covered) == 0 {
			continue
		}
		blocked += len(covered)
		ref := ObjectRef{APIVersion: "policy/v1", Kind: "PodDisruptionBudget", Resource: "poddisruptionbudgets", Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}
		c := Finding{Cause: CauseDrainBlockedByPDB, Catalog: "D5", Severity: SeverityBlocker, Object: &ref,
			Message: fmt.Sprintf("%s allows 0 disruptions (%d healthy, %d required) and covers pod(s) %s on the node: the drain cannot evict them",
				ref, b.Status.CurrentHealthy, b.Status.DesiredHealthy, strings.Join(covered, ", ")),
			FixOwner: "the owner of the workload behind the budget",
			Remedy:   "make one disruption possible: scale the workload up or fix its unhealthy pods, or relax minAvailable/maxUnavailable; Karpenter's NodePool terminationGracePeriod bounds how long a drain may wait",
			Leaks:    "nothing: this is the drain doing its job"}
		if gone {
			c.Severity = SeverityWarning
			c.Message += " (once its owner runs again)"
		}
		fd.Children = append(fd.Children, c)
	}
	drainMsg := fmt.Sprintf("%d pod(s) still run on the node (DaemonSet pods aside)", len(drained))
	switch {
	case gone:
		fd.Message += "; " + drainMsg
	case blocked > 0:
		fd.Cause, fd.Catalog, fd.Severity = CauseNodeDrainBlocked, "D5", SeverityBlocker
		fd.Message = fmt.Sprintf("%s owns %q and drains the node before terminating its instance; %s, %d of them protected by PodDisruptionBudgets that allow no disruption", orUnknown(fd.Owner.Component), fd.Finalizer, drainMsg, blocked)
		fd.FixOwner = "workload owner (the budgets below); cluster-autoscaling owner"
		fd.Remedy = "let the drain through (the budgets below); releasing the finalizer skips the drain and leaks the cloud instance"
	default:
		fd.Message += "; " + drainMsg + ": the drain is in progress"
	}
}

func isDaemonPod(p *corev1.Pod) bool {
	for _, r := range p.OwnerReferences {
		if r.Kind == "DaemonSet" && r.Controller != nil && *r.Controller {
			return true
		}
	}
	return false
}

// ownerGone says whether a finding's owner was found stopped or missing:
// then the owner is the root blocker, and what it would wait on next is a
// warning.
func ownerGone(fd *Finding) bool {
	return fd.Owner != nil && (fd.Owner.State == OwnerDown || fd.Owner.State == OwnerMissing)
}

// cloningProtection: C6. The CSI external-provisioner removes
// provisioner.storage.kubernetes.io/cloning-protection from a source claim
// once no claim cloned from it is still Pending.
func (e *explainer) cloningProtection(ctx context.Context, fd *Finding, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	pvcs, err := e.c.kube.CoreV1().PersistentVolumeClaims(obj.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var clones []Finding
	for _, c := range pvcs.Items {
		src := c.Spec.DataSource
		if src == nil && c.Spec.DataSourceRef != nil && (c.Spec.DataSourceRef.Namespace == nil || *c.Spec.DataSourceRef.Namespace == obj.GetNamespace()) {
			src = &corev1.TypedLocalObjectReference{APIGroup: c.Spec.DataSourceRef.APIGroup, Kind: c.Spec.DataSourceRef.Kind, Name: c.Spec.DataSourceRef.Name}
		}
		if src == nil || src.Kind != "PersistentVolumeClaim" || (src.APIGroup != nil && *src.APIGroup != "") || src.Name != obj.GetName() || c.Status.Phase == corev1.ClaimBound {
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "PersistentVolumeClaim", Resource: "persistentvolumeclaims", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID)}
		f := Finding{Cause: CauseCloneInProgress, Catalog: "C6", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("%s is cloned from this claim and is still %s", ref, orUnknown(string(c.Status.Phase))),
			FixOwner: "the owner of the clone; the CSI driver's owner",
			Remedy:   fmt.Sprintf("let the clone finish (its events say why it is Pending), or delete it: kubectl delete pvc %s -n %s", c.Name, c.Namespace),
			Leaks:    "nothing once the clone is deleted; a clone finishing from a deleted source may fail"}
		if ownerGone(fd) {
			f.Severity = SeverityWarning
			f.Message += " (the provisioner cannot finish it while it is gone)"
		}
		clones = append(clones, f)
	}
	if len(clones) == 0 {
		return
	}
	fd.Children = append(fd.Children, clones...)
	if ownerGone(fd) {
		fd.Message += fmt.Sprintf("; %d clone(s) of this claim are still Pending", len(clones))
		return
	}
	fd.Cause, fd.Catalog, fd.Severity = CauseCloneInProgress, "C6", SeverityBlocker
	fd.Message = fmt.Sprintf("%s keeps this source claim until its %d Pending clone(s) are provisioned or deleted", orUnknown(fd.Owner.Component), len(clones))
	fd.FixOwner = "the owners of the clones"
	fd.Remedy = "finish or delete the clone claims below; then the provisioner removes the finalizer"
}

// volumeDetach: C4. The CSI external-attacher removes external-attacher/<driver>
// from a VolumeAttachment (and then from its PV) once the volume is
// detached from the node; it cannot detach from a node that is gone or not
// Ready, and reports failures in status.detachError.
func (e *explainer) volumeDetach(ctx context.Context, fd *Finding, gvr schema.GroupVersionResource, obj metav1.Object) {
	if fd.Cause == CauseOwnerLacksRBAC || fd.Cause == CauseOrphanFinalizer {
		return
	}
	st := e.c.kube.StorageV1().VolumeAttachments()
	var vas []storagev1.VolumeAttachment
	if gvr.Resource == "volumeattachments" {
		va, err := st.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return
		}
		vas = append(vas, *va)
	} else {
		l, err := st.List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, va := range l.Items {
			if va.Spec.Source.PersistentVolumeName != nil && *va.Spec.Source.PersistentVolumeName == obj.GetName() {
				vas = append(vas, va)
			}
		}
	}
	var problems []Finding
	for _, va := range vas {
		ref := ObjectRef{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment", Resource: "volumeattachments", Name: va.Name, UID: string(va.UID)}
		state := fmt.Sprintf("attached=%v", va.Status.Attached)
		if va.Status.DetachError != nil {
			state += ", detach error: " + va.Status.DetachError.Message
		}
		node, err := e.c.kube.CoreV1().Nodes().Get(ctx, va.Spec.NodeName, metav1.GetOptions{})
		ready := corev1.ConditionUnknown
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					ready = c.Status
				}
			}
		}
		var f Finding
		switch {
		case apierrors.IsNotFound(err):
			f = Finding{Message: fmt.Sprintf("%s (%s) is on node %s, which no longer exists", ref, state, va.Spec.NodeName),
				FixOwner: "cluster operator", Remedy: "the attach-detach controller (kube-controller-manager) detaches volumes of deleted nodes; check it runs"}
		case err == nil && ready != corev1.ConditionTrue:
			f = Finding{Message: fmt.Sprintf("%s (%s) is on node %s, which is Ready=%s: the volume cannot be detached from it safely", ref, state, node.Name, ready),
				FixOwner: "node or infrastructure owner",
				Remedy:   fmt.Sprintf("recover the node; if it is confirmed dead, taint it so the volume is force-detached: kubectl taint node %s node.kubernetes.io/out-of-service=nodeshutdown:NoExecute", node.Name)}
		case va.Status.DetachError != nil:
			f = Finding{Message: fmt.Sprintf("%s cannot be detached from node %s: %s", ref, va.Spec.NodeName, va.Status.DetachError.Message),
				FixOwner: "CSI driver owner; storage admin", Remedy: "fix the CSI driver or the storage backend so ControllerUnpublishVolume succeeds"}
		default:
			continue
		}
		f.Cause, f.Catalog, f.Severity, f.Object = CauseVolumeDetachBlocked, "C4", SeverityBlocker, &ref
		f.Leaks = "a volume attached to a node: another node cannot attach it (data may still be written to it)"
		if ownerGone(fd) {
			f.Severity = SeverityWarning
		}
		problems = append(problems, f)
	}
	if len(problems) == 0 {
		return
	}
	fd.Children = append(fd.Children, problems...)
	if ownerGone(fd) {
		return
	}
	fd.Cause, fd.Catalog, fd.Severity = CauseVolumeDetachBlocked, "C4", SeverityBlocker
	fd.Message = fmt.Sprintf("%s removes %q once the volume is detached, and cannot detach it (%d attachment(s) below)", orUnknown(fd.Owner.Component), fd.Finalizer, len(problems))
	fd.FixOwner = "node or storage owner"
	fd.Remedy = "fix the attachments below; then the attacher detaches the volume and removes the finalizer"
}

// resourceClaim: C12. The resource claim controller removes
// resource.kubernetes.io/delete-protection once no pod reserves the claim
// (it drops reservations of pods that are gone or finished) and the claim is
// deallocated.
func (e *explainer) resourceClaim(ctx context.Context, fd *Finding, obj metav1.Object) {
	fd.Cause, fd.Catalog = CauseResourceClaimInUse, "C12"
	fd.Owner = e.builtInOwner(ctx, "resource claim controller (kube-controller-manager)")
	fd.FixOwner = "the owners of the pods that use the claim; the DRA driver's owner"
	claim, err := e.c.kube.ResourceV1().ResourceClaims(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		fd.Message = "could not read the ResourceClaim: " + err.Error()
		return
	}
	var devices []string
	if a := claim.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			devices = append(devices, r.Driver+"/"+r.Pool+"/"+r.Device)
		}
	}
	stale := 0
	for _, r := range claim.Status.ReservedFor {
		if r.Resource != "pods" || r.APIGroup != "" {
			ref := ObjectRef{APIVersion: r.APIGroup, Kind: r.Resource, Resource: r.Resource, Namespace: claim.Namespace, Name: r.Name, UID: string(r.UID)}
			fd.Children = append(fd.Children, Finding{Cause: CauseResourceClaimInUse, Catalog: "C12", Severity: SeverityBlocker, Object: &ref,
				Message: fmt.Sprintf("%s %s reserves the claim", r.Resource, r.Name), FixOwner: "its owner", Remedy: "delete it, or have its controller release the claim"})
			continue
		}
		pod, err := e.c.kube.CoreV1().Pods(claim.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil || pod.UID != r.UID || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			stale++
			continue
		}
		ref := ObjectRef{APIVersion: "v1", Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
		f := Finding{Cause: CauseResourceClaimInUse, Catalog: "C12", Severity: SeverityBlocker, Object: &ref,
			Message:  fmt.Sprintf("pod %s (phase %s, node %s) reserves the claim", pod.Name, pod.Status.Phase, orUnknown(pod.Spec.NodeName)),
			FixOwner: "the pod's owner",
			Remedy:   fmt.Sprintf("delete the pod (kubectl delete pod %s -n %s) or let it finish; the driver then unprepares the devices", pod.Name, pod.Namespace)}
		if pod.DeletionTimestamp != nil {
			obj := metav1.PartialObjectMetadata{ObjectMeta: pod.ObjectMeta}
			f.Message += "; it is terminating itself"
			f.Children = e.podFindings(ctx, &obj)
			if len(f.Children) > 0 && f.Children[0].Severity != SeverityBlocker {
				f.Severity = SeverityWaiting
			}
		}
		fd.Children = append(fd.Children, f)
	}
	alloc := "not allocated"
	if len(devices) > 0 {
		alloc = "allocated " + strings.Join(devices, ", ")
	}
	if len(fd.Children) > 0 {
		fd.Message = fmt.Sprintf("the claim is %s and reserved by %d consumer(s) that still run; the resource claim controller removes the finalizer once none does and the claim is deallocated", alloc, len(fd.Children))
		return
	}
	since := e.now.Sub(obj.GetDeletionTimestamp().Time)
	fd.Severity = SeverityWaiting
	what := "deallocates it and removes the finalizer"
	if stale > 0 {
		what = fmt.Sprintf("drops the %d reservation(s) of pods that are gone or finished, deallocates it and removes the finalizer", stale)
	}
	fd.Message = fmt.Sprintf("the claim is %s and no running pod reserves it; the resource claim controller %s (deleting for %s; %s)", alloc, what, age(since), fd.Owner.Evidence[0])
	if since > gcGrace || fd.Owner.State == OwnerDown {
		fd.Severity = SeverityBlocker
		fd.FixOwner = "cluster operator (kube-controller-manager)"
		fd.Remedy = "check that kube-controller-manager runs its resource claim controller, and the DRA driver's logs; releasing the finalizer leaves the devices' allocation to nobody"
	}
}
