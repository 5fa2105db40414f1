/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

// Package steps runs a policy's cleanup steps (webhook, job, delete, wait) for
// one target object, in order, as the handler of the policy's finalizer.
package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// StateAnnotationPrefix starts the annotation that records, on a target,
// which step of a policy's cleanup it is at and since when, so a restart
// resumes there instead of repeating finished steps.
const StateAnnotationPrefix = "steps.teardown.dev/"

// pollInterval is how soon a pending step is checked again when it says
// nothing better.
const pollInterval = 2 * time.Second

// Runner runs steps. Client writes (Jobs, deletes, the state annotation);
// Reader lists step resources straight from the API server, so that steps do
// not start cluster-wide informers for every kind they mention.
type Runner struct {
	Client client.Client
	Reader client.Reader
	Mapper meta.RESTMapper
	HTTP   *HTTPClients
	Now    func() time.Time
}

// State is the record kept in the state annotation.
type State struct {
	// Step is the index of the first step not finished.
	Step int `json:"step"`
	// Since is when that step started.
	Since time.Time `json:"since"`
}

// StateAnnotation returns the annotation key for a policy's finalizer key.
func StateAnnotation(key string) string {
	return StateAnnotationPrefix + strings.TrimPrefix(finalizer.ProgressAnnotation(key), finalizer.ProgressAnnotationPrefix)
}

// ReadState returns the recorded state of key's steps on obj.
func ReadState(obj metav1.Object, key string) State {
	var s State
	if v, ok := obj.GetAnnotations()[StateAnnotation(key)]; ok {
		_ = json.Unmarshal([]byte(v), &s)
	}
	return s
}

// Target is the object being torn down.
type Target struct {
	GVK schema.GroupVersionKind
	Obj client.Object
}

// outcome is what one step says.
type outcome struct {
	done    bool
	after   time.Duration // pending: check again after
	message string        // pending or failed: why
	err     error         // failed
}

func done() outcome { return outcome{done: true} }

func pending(after time.Duration, format string, args ...any) outcome {
	if after <= 0 {
		after = pollInterval
	}
	return outcome{after: after, message: fmt.Sprintf(format, args...)}
}

func failed(err error) outcome { return outcome{err: err, message: err.Error()} }

// Run runs pol's steps for t from the recorded one on, and answers the
// finalizer protocol. Finished steps are recorded only when the cleanup
// stops before the end, so a cleanup done in one go writes nothing.
func (r *Runner) Run(ctx context.Context, pol *policy.Policy, t Target) finalizer.Result {
	log := logf.FromContext(ctx).WithValues("policy", pol.Ref.String(), "target", klog.KObj(t.Obj))
	recorded := ReadState(t.Obj, pol.Key)
	state := recorded
	now := r.Now()
	for state.Step < len(pol.Steps) {
		step := pol.Steps[state.Step]
		if state.Since.IsZero() {
			state.Since = now
		}
		out := r.runStep(ctx, pol, state.Step, t)
		if !out.done && out.err == nil && step.Timeout != nil && now.Sub(state.Since) > step.Timeout.Duration {
			out = failed(fmt.Errorf("timed out after %s: %s", step.Timeout.Duration, out.message))
		}
		switch {
		case out.done:
			log.V(2).Info("Cleanup step done", "step", step.Name)
			state = State{Step: state.Step + 1}
			continue
		case out.err == nil:
			r.saveState(ctx, t, pol.Key, recorded, state)
			return finalizer.Pending(out.after, fmt.Sprintf("step %s: %s", step.Name, out.message))
		}
		switch step.OnFailure {
		case teardownv1alpha1.FailureContinue:
			log.Info("Cleanup step failed; continuing as the policy says", "step", step.Name, "err", out.err.Error())
			state = State{Step: state.Step + 1}
			continue
		case teardownv1alpha1.FailureRelease:
			return finalizer.Release(fmt.Sprintf("step %s failed and its policy says Release: %s", step.Name, out.message))
		default:
			r.saveState(ctx, t, pol.Key, recorded, state)
			return finalizer.Retry(fmt.Errorf("step %s: %w", step.Name, out.err))
		}
	}
	return finalizer.Done()
}

func (r *Runner) runStep(ctx context.Context, pol *policy.Policy, i int, t Target) outcome {
	step := pol.Steps[i]
	switch {
	case step.Webhook != nil:
		return r.webhook(ctx, pol, step, t)
	case step.Job != nil:
		return r.job(ctx, pol, step, t)
	case step.Delete != nil:
		return r.delete(ctx, step.Delete, t)
	case step.Wait != nil:
		return r.wait(ctx, pol.Conditions[i], step.Wait, t)
	default:
		return failed(errors.New("step has no action"))
	}
}

// saveState records state when it differs from what the object carries.
// Failing to record is not fatal: finished steps are idempotent and run
// again.
func (r *Runner) saveState(ctx context.Context, t Target, key string, recorded, state State) {
	if recorded.Step == state.Step && recorded.Since.Equal(state.Since) {
		return
	}
	state.Since = state.Since.UTC().Truncate(time.Second)
	value, err := json.Marshal(state)
	if err == nil {
		var patch []byte
		patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{StateAnnotation(key): string(value)}}})
		if err == nil {
			err = r.Client.Patch(ctx, t.Obj, client.RawPatch(types.MergePatchType, patch))
		}
	}
	if err != nil {
		logf.FromContext(ctx).V(2).Info("Could not record the cleanup step", "target", klog.KObj(t.Obj), "err", err.Error())
	}
}
