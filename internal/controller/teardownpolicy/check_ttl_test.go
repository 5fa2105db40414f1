/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package teardownpolicy

import (
	"testing"
	"time"
)

// A passed check is trusted between clusterCheckTTL and 20% more, drawn per
// check, so that policies checked together expire apart; a failed one is
// asked again after failedCheckTTL exactly.
func TestCheckTTLSpreadsPassedChecks(t *testing.T) {
	if got := checkTTL(true); got != failedCheckTTL {
		t.Errorf("failed check trusted %s, want %s", got, failedCheckTTL)
	}
	seen := map[time.Duration]bool{}
	for range 100 {
		ttl := checkTTL(false)
		if ttl < clusterCheckTTL || ttl > clusterCheckTTL+clusterCheckTTL/5 {
			t.Fatalf("passed check trusted %s, want within [%s, %s]", ttl, clusterCheckTTL, clusterCheckTTL+clusterCheckTTL/5)
		}
		seen[ttl] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 passed checks expire at only %d distinct times: not spread", len(seen))
	}
}
