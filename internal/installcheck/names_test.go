/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package installcheck_test

import (
	"testing"

	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/installcheck"
)

// The check names what the controller makes under names of its own; it
// cannot import the controller (a layer above it), so this holds the two
// spellings together.
func TestCheckNamesTheControllersObjects(t *testing.T) {
	if installcheck.LeaseName != controller.LeaderElectionID {
		t.Errorf("installcheck.LeaseName %q, the controller's Lease %q", installcheck.LeaseName, controller.LeaderElectionID)
	}
	if installcheck.InUseWebhookConfig != admit.InUseConfiguration {
		t.Errorf("installcheck.InUseWebhookConfig %q, the in-use webhook's configuration %q", installcheck.InUseWebhookConfig, admit.InUseConfiguration)
	}
}
