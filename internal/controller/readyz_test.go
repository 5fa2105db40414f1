/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// With a webhook on, /readyz checks the webhook server too (its TLS
// listener answers), so a replica's Service endpoint, which the API server
// calls, is ready only once it serves: kubectl teardown check relies on it.
func TestReadyzCoversTheWebhookServer(t *testing.T) {
	testenv.SkipShort(t)
	var body string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probeAddr+"/readyz?verbose", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz not ready: %v\n%s", err, body)
	}
	if !strings.Contains(body, "[+]webhook ok") {
		t.Errorf("/readyz does not check the webhook server:\n%s", body)
	}
}
