/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package diagnose

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/teardown-dev/teardown/internal/diagnose/kube"
)

// Liveness states of a control-plane controller, read from its
// leader-election Lease.
const (
	// LivenessRenewing: the Lease was renewed within its
	// leaseDurationSeconds; the controller runs.
	LivenessRenewing = "renewing"
	// LivenessNotRenewing: the Lease is older than its leaseDurationSeconds
	// (or was released and nobody took it over): no instance leads, so
	// nothing the controller runs makes progress until one is back.
	LivenessNotRenewing = "notRenewing"
	// LivenessGone: there is no Lease at all.
	LivenessGone = "gone"
	// LivenessUnknown: the Lease could not be read (RBAC, API error).
	LivenessUnknown = "unknown"
)

// Clocks a liveness was judged with.
const (
	ClockAPIServer = kube.ClockAPIServer
	ClockLocal     = kube.ClockLocal
)

// ControllerLiveness is what a control-plane controller's leader-election
// Lease says about it; explain reports the ones it read.
type ControllerLiveness struct {
	// Component is the process: kube-controller-manager.
	Component string `json:"component"`
	// Lease is namespace/name of its leader-election Lease.
	Lease string `json:"lease"`
	// State is renewing, notRenewing, gone or unknown.
	State  string `json:"state"`
	Holder string `json:"holder,omitempty"`
	// RenewTime and LeaseDurationSeconds are the Lease's.
	RenewTime            *metav1.MicroTime `json:"renewTime,omitempty"`
	LeaseDurationSeconds int32             `json:"leaseDurationSeconds,omitempty"`
	// SinceRenewal is how long ago it was renewed, and PastDuration how
	// long past its lease duration that is (notRenewing only), both by
	// Clock.
	SinceRenewal string `json:"sinceRenewal,omitempty"`
	PastDuration string `json:"pastDuration,omitempty"`
	// Clock is apiServer when the times were compared with the API
	// server's clock (the Date header of its responses), local when with
	// this machine's.
	Clock string `json:"clock,omitempty"`
	// LeaderElection says, for a gone Lease, whether the control plane is
	// seen to elect leaders (another control-plane Lease exists), which
	// makes the missing Lease evidence that the controller does not run.
	LeaderElection bool `json:"leaderElection,omitempty"`
	// Evidence is the one-line account of the above.
	Evidence string `json:"evidence"`
}

// ownerState maps the liveness to an Owner state: a Lease not renewed is a
// controller down; a missing Lease, where the control plane is seen to elect
// leaders, is one missing; otherwise it is not known.
func (l ControllerLiveness) ownerState() string {
	switch {
	case l.State == LivenessRenewing:
		return OwnerAlive
	case l.State == LivenessNotRenewing:
		return OwnerDown
	case l.State == LivenessGone && l.LeaderElection:
		return OwnerMissing
	}
	return OwnerUnknown
}

// Stopped is true when the Lease shows the controller is not running: not
// renewing, or gone where leaders are elected.
func (l ControllerLiveness) Stopped() bool {
	s := l.ownerState()
	return s == OwnerDown || s == OwnerMissing
}

// why is the sentence A11 and E2 give for a stopped controller.
func (l ControllerLiveness) why() string {
	if l.State == LivenessNotRenewing {
		return fmt.Sprintf("%s is not renewing its Lease: %s", l.Component, l.Evidence)
	}
	return fmt.Sprintf("%s is not running: %s", l.Component, l.Evidence)
}

// Short is status's account of a stopped controller.
func (l ControllerLiveness) Short() string {
	switch l.State {
	case LivenessNotRenewing:
		if l.SinceRenewal == "" {
			return fmt.Sprintf("%s never renewed its Lease", l.Component)
		}
		return fmt.Sprintf("%s not renewing its Lease, last renewed %s ago (%s past its %ds duration)", l.Component, l.SinceRenewal, l.PastDuration, l.LeaseDurationSeconds)
	case LivenessGone:
		return fmt.Sprintf("%s not running: no Lease %s where leaders are elected", l.Component, l.Lease)
	}
	return l.Component + " " + l.State
}

// check says where to look for a stopped kube-controller-manager.
const kcmCheck = "check kube-controller-manager's pod and logs (kubectl -n kube-system get pods -l component=kube-controller-manager; kubectl -n kube-system logs -l component=kube-controller-manager --previous), or its static pod manifest or systemd unit on the control-plane nodes"

// kcmStoppedMeaning says what a stopped kube-controller-manager means for
// deletions.
const kcmStoppedMeaning = "until it is back, nothing it runs makes progress: the namespace controller's kubernetes token, the garbage collector's foregroundDeletion and orphan finalizers and the other built-in controllers' finalizers stay where they are"

// leaseRef is the Lease of kube-controller-manager, and the ones whose
// presence shows the control plane elects leaders.
const (
	kcmLeaseNamespace = "kube-system"
	kcmLeaseName      = "kube-controller-manager"
)

var leaderElectionWitnesses = []string{"kube-scheduler", "cloud-controller-manager"}

// ControllerManagerLiveness reads kube-controller-manager's Lease (one GET; a
// second, of the scheduler's, only when it is gone) and judges it against
// the API server's clock. now is this machine's clock.
func ControllerManagerLiveness(ctx context.Context, c *kube.Cluster, now time.Time) ControllerLiveness {
	l := ControllerLiveness{Component: "kube-controller-manager", Lease: kcmLeaseNamespace + "/" + kcmLeaseName}
	lease, err := c.Lease(ctx, kcmLeaseNamespace, kcmLeaseName)
	switch {
	case apierrors.IsNotFound(err):
		l.State = LivenessGone
		for _, w := range leaderElectionWitnesses {
			other, err := c.Lease(ctx, kcmLeaseNamespace, w)
			if err != nil {
				continue
			}
			l.LeaderElection = true
			l.Evidence = fmt.Sprintf("there is no Lease %s although the control plane elects leaders (Lease %s/%s exists): kube-controller-manager has not been elected since the Lease was removed, so none runs", l.Lease, kcmLeaseNamespace, other.Name)
			return l
		}
		l.Evidence = fmt.Sprintf("there is no Lease %s: kube-controller-manager runs without leader election (--leader-elect=false), on a control plane that hides it, or not at all; its liveness cannot be read", l.Lease)
		return l
	case err != nil:
		l.State = LivenessUnknown
		l.Evidence = fmt.Sprintf("Lease %s could not be read (%v); kube-controller-manager's liveness is unknown", l.Lease, Shorten(err.Error(), 120))
		return l
	}
	serverNow, clock := c.ServerNow(now)
	l.Clock = clock
	dur := 15 * time.Second
	if lease.Spec.LeaseDurationSeconds != nil {
		l.LeaseDurationSeconds = *lease.Spec.LeaseDurationSeconds
		dur = time.Duration(l.LeaseDurationSeconds) * time.Second
	}
	if lease.Spec.HolderIdentity != nil {
		l.Holder = *lease.Spec.HolderIdentity
	}
	holder := fmt.Sprintf("holder %q", l.Holder)
	if l.Holder == "" {
		holder = "released by its holder, no one holds it"
	}
	clockNote := ""
	if clock == ClockLocal {
		clockNote = "; by this machine's clock, the API server gave none"
	}
	renewed := lease.Spec.RenewTime
	if renewed == nil {
		renewed = lease.Spec.AcquireTime
	}
	if renewed == nil {
		l.State = LivenessNotRenewing
		l.Evidence = fmt.Sprintf("Lease %s (%s) has never been renewed", l.Lease, holder)
		return l
	}
	l.RenewTime = renewed.DeepCopy()
	since := serverNow.Sub(renewed.Time)
	if since < 0 {
		since = 0
	}
	l.SinceRenewal = ShortDuration(since.Round(time.Second))
	if since > dur {
		l.State = LivenessNotRenewing
		// In whole seconds, and past its duration by at least one.
		rounded := since.Round(time.Second)
		if rounded <= dur {
			rounded = dur + time.Second
		}
		l.SinceRenewal = ShortDuration(rounded)
		l.PastDuration = ShortDuration(rounded - dur)
		l.Evidence = fmt.Sprintf("Lease %s (%s) was last renewed %s ago, %s past its %s lease duration%s",
			l.Lease, holder, l.SinceRenewal, l.PastDuration, ShortDuration(dur), clockNote)
		return l
	}
	l.State = LivenessRenewing
	l.Evidence = fmt.Sprintf("Lease %s is held by %q and renewing: renewed %s ago, within its %s lease duration%s",
		l.Lease, l.Holder, l.SinceRenewal, ShortDuration(dur), clockNote)
	return l
}

// controllerManager is kube-controller-manager's liveness, read once per
// run (at the first caller's now).
func controllerManager(ctx context.Context, c *kube.Cluster, now time.Time) ControllerLiveness {
	return kube.Memo(c, "kcm", func() ControllerLiveness { return ControllerManagerLiveness(ctx, c, now) })
}

// controllerManager judges kube-controller-manager from its leader-election
// Lease (kube-system/kube-controller-manager), the only liveness signal the
// API gives for built-in controllers, read once per run: alive while it
// renews, down once it is older than its lease duration, missing when it is
// gone where the control plane elects leaders, unknown otherwise (leader
// election off, a managed control plane that hides it, unreadable).
func (e *Explainer) controllerManager(ctx context.Context) (state, evidence string) {
	l := e.kcmLiveness(ctx)
	return l.ownerState(), l.Evidence
}

// kcmLiveness is kube-controller-manager's liveness, read once per run.
func (e *Explainer) kcmLiveness(ctx context.Context) ControllerLiveness {
	return controllerManager(ctx, e.c, e.now)
}

// controllerManagerStopped makes sure no finding waits, as if in progress,
// on a controller of a kube-controller-manager whose Lease shows it
// stopped: nothing it runs makes progress, so such a wait is a blocker with
// kube-controller-manager as its cause.
func (e *Explainer) controllerManagerStopped(fs []Finding, kcm ControllerLiveness) {
	if !kcm.Stopped() {
		return
	}
	WalkFindings(fs, func(f *Finding) {
		if f.Owner == nil || !strings.Contains(f.Owner.Component, "(kube-controller-manager)") {
			return
		}
		f.Owner.State, f.Owner.Evidence = kcm.ownerState(), []string{kcm.Evidence}
		if f.Severity != SeverityWaiting {
			return
		}
		f.Severity = SeverityBlocker
		f.Message += "; but " + kcm.why() + "; " + kcmStoppedMeaning
		f.FixOwner = "cluster operator"
		f.Remedy = "bring kube-controller-manager back: " + kcmCheck
	})
}

// usesControllerManager is true when a finding waits on a controller of
// kube-controller-manager.
func (e *Explainer) usesControllerManager(fs []Finding) bool {
	found := false
	WalkFindings(fs, func(f *Finding) {
		if f.Owner != nil && strings.Contains(f.Owner.Component, "(kube-controller-manager)") {
			found = true
		}
	})
	return found
}
