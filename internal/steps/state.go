/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package steps

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/teardown-dev/teardown/internal/lease"
	"github.com/teardown-dev/teardown/internal/policy"
	"github.com/teardown-dev/teardown/internal/recordseal"
	"github.com/teardown-dev/teardown/pkg/finalizer"
)

// StateAnnotationPrefix starts the annotation that records, on a target,
// which step of a policy's cleanup it is at and since when, so a restart
// resumes there instead of repeating finished steps.
const StateAnnotationPrefix = "steps.teardown.dev/"

// maxStateAnnotation bounds what is parsed: a genuine record is about 200
// bytes, and anyone who may patch the target may write this annotation.
const maxStateAnnotation = 1024

// record is what the state annotation holds. Progress is bound to what it is
// progress of: the policy (its UID), the version of its steps (the
// fingerprint) and the step itself (its index and its name), so that an
// edited, reordered or deleted-and-recreated policy, or a hand-written
// record, never resumes past a step that did not finish under the steps in
// force.
//
// It is also bound to the object it was written for (its UID, which nobody
// knows before the object exists and a restored copy does not keep): a
// record written at CREATE, or copied from another object, reads as none.
type record struct {
	Object      types.UID `json:"object"`
	Policy      types.UID `json:"policy"`
	Fingerprint string    `json:"fingerprint"`
	// Step is the index of the first step not finished; Name is its name.
	Step  int       `json:"step"`
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
	// Generation is the policy's generation of the version in force that
	// wrote the record; Lease and Epoch are the writer's leadership
	// (lease.Epoch: the Lease's UID and its transitions). A writer behind
	// either refuses to write (fence.go). A record the previous release
	// wrote has none of them: 0.
	Generation int64  `json:"generation,omitempty"`
	Lease      string `json:"lease,omitempty"`
	Epoch      int64  `json:"epoch,omitempty"`
	// Seal proves that the controller wrote the record for this object
	// under this key (recordseal): the HMAC of the rest, keyed by a key
	// only the controller holds. A record the previous release wrote, or
	// this one without keys, has none.
	Seal string `json:"seal,omitempty"`
}

// sealed returns rec with its seal under keys (none without keys).
func (rec record) sealed(keys *recordseal.Keyring, key string) (record, error) {
	rec.Seal = ""
	if keys == nil {
		return rec, nil
	}
	text, err := rec.sealedText()
	if err != nil {
		return record{}, err
	}
	rec.Seal = keys.Seal(StateAnnotation(key), text)
	return rec, nil
}

// sealedText is what rec's seal covers, with key's annotation name: the
// record without its seal, as JSON.
func (rec record) sealedText() (string, error) {
	rec.Seal = ""
	text, err := json.Marshal(rec)
	return string(text), err
}

// proven reports whether rec, key's record bound to obj, is the
// controller's: its seal checks under Keys, or it has none and obj was
// created before records were sealed (Keyring.Since: the previous
// release's, or this one's before its keys were made). A record without a
// seal on a later object, or whose seal does not check (written by
// someone else, copied from another object or key, or edited), is not.
func (rs Records) proven(obj metav1.Object, key string, rec record) bool {
	if rs.Keys == nil {
		return true
	}
	if rec.Seal == "" {
		return rs.olderThanKeys(obj)
	}
	text, err := rec.sealedText()
	return err == nil && rs.Keys.Verify(rec.Seal, StateAnnotation(key), text)
}

// epoch is the leadership that wrote rec.
func (rec record) epoch() lease.Epoch {
	return lease.Epoch{Lease: rec.Lease, Transitions: rec.Epoch}
}

// StateAnnotation returns the annotation key for a policy's finalizer key.
func StateAnnotation(key string) string {
	return StateAnnotationPrefix + strings.TrimPrefix(finalizer.ProgressAnnotation(key), finalizer.ProgressAnnotationPrefix)
}

// Position is where a cleanup stands, as Resume reads it.
type Position struct {
	// Index is the first step not finished: 0 when nothing (trustworthy) is
	// recorded.
	Index int
	// Step is that step's name; empty when the policy has no steps.
	Step string
	// Since is when that step started; zero when nothing is recorded.
	Since time.Time
	// TimedOut says the step's timeout had passed at the time asked about:
	// the step has failed definitively (reason StepTimedOut) and its
	// onFailure applies.
	TimedOut bool
}

// Resume reads the position of key's cleanup of obj under pol, as of now.
// key is the finalizer key the cleanup runs under (the policy's current key,
// or an older one an earlier version attached). A record written for another
// policy or another version of its steps, or whose step name is not the name
// of the step at its index, or that does not parse (edited, reordered,
// forged or garbled), reads as no record: index 0. Nothing in the annotation
// can make Resume panic or return an index out of range of pol.Steps (Index
// is 0 when pol has no steps).
func (rs Records) Resume(obj metav1.Object, pol *policy.Policy, key string, now time.Time) Position {
	rec, ok := rs.read(obj, pol, key)
	return position(obj, pol, rec, ok, now)
}

// position is Resume's answer from rec, the record read (ok: there is one
// that belongs to pol as it is).
func position(obj metav1.Object, pol *policy.Policy, rec record, ok bool, now time.Time) Position {
	if !ok {
		pos := Position{}
		if len(pol.Steps) > 0 {
			pos.Step = pol.Steps[0].Name
		}
		return pos
	}
	pos := Position{Index: rec.Step, Step: rec.Name, Since: rec.Since}
	// A record from the future (clock skew, or forged) counts from now: it
	// must not postpone a timeout indefinitely.
	if pos.Since.After(now) {
		pos.Since = now
	}
	// No step started before the object's deletion: a record claiming so
	// (restored from a backup, or forged) counts from the deletion, so it
	// cannot make a step time out sooner than the deletion allows.
	if deleted := obj.GetDeletionTimestamp(); deleted != nil && pos.Since.Before(deleted.Time) {
		pos.Since = deleted.Time
	}
	if t := pol.Steps[rec.Step].Timeout; t != nil && t.Duration > 0 {
		pos.TimedOut = now.Sub(pos.Since) > t.Duration
	}
	return pos
}

// StartedBy returns the UID of the policy whose cleanup of obj under key
// has started, from key's step record when that record was written for obj
// itself (whatever version of the policy's steps) and is proven (its seal
// checks, or the object is older than the keys). A teardown that started
// under one policy finishes under that policy's steps, whoever owns the key
// later.
func (rs Records) StartedBy(obj metav1.Object, key string) (types.UID, bool) {
	rec, ok := rs.bound(obj, key)
	if !ok || rec.Policy == "" {
		return "", false
	}
	return rec.Policy, true
}

// StartedByEarlierRelease returns the UID of the policy that key's step
// record on obj names when the record is not bound to any object: the form
// an earlier release wrote, before records named their object's UID. Such a
// record proves nothing by itself (anyone who creates an object can write
// one): the caller trusts it only on an object created before its policy's
// status.boundRecordsSince, that is, written while the earlier release
// served the policy (guarded's actor and startedByEarlierRelease). A
// record bound to another object is not one.
func StartedByEarlierRelease(obj metav1.Object, key string) (types.UID, bool) {
	rec, ok := parseRecord(obj, key)
	if !ok || rec.Object != "" || rec.Policy == "" {
		return "", false
	}
	return rec.Policy, true
}

// bound returns key's record on obj when it was written for obj (whatever
// policy or version wrote it) and is proven.
func (rs Records) bound(obj metav1.Object, key string) (record, bool) {
	rec, ok := parseRecord(obj, key)
	if !ok || obj.GetUID() == "" || rec.Object != obj.GetUID() || !rs.proven(obj, key, rec) {
		return record{}, false
	}
	return rec, true
}

// parseRecord reads key's record on obj, whoever it was written for; it
// parses no more than a genuine record's bound.
func parseRecord(obj metav1.Object, key string) (record, bool) {
	v, ok := obj.GetAnnotations()[StateAnnotation(key)]
	if !ok || len(v) > maxStateAnnotation {
		return record{}, false
	}
	var rec record
	if err := json.Unmarshal([]byte(v), &rec); err != nil {
		return record{}, false
	}
	return rec, true
}

// read returns key's record on obj when it belongs to pol as it is.
func (rs Records) read(obj metav1.Object, pol *policy.Policy, key string) (record, bool) {
	rec, ok := rs.bound(obj, key)
	return rec.of(pol, ok)
}

// of returns rec, a bound record (ok), when it belongs to pol as it is.
func (rec record) of(pol *policy.Policy, ok bool) (record, bool) {
	// Fingerprint "" is what policy.Fingerprint answers when it cannot hash:
	// it must never match. The index is checked before it is used.
	if !ok || pol.UID == "" || rec.Policy != pol.UID || rec.Fingerprint == "" || rec.Fingerprint != pol.Fingerprint ||
		rec.Step < 0 || rec.Step >= len(pol.Steps) || rec.Name != pol.Steps[rec.Step].Name || rec.Since.IsZero() {
		return record{}, false
	}
	return rec, true
}
