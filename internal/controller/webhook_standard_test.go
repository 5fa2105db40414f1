/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

var (
	receiverOnce sync.Once
	receiverBin  string
	receiverErr  error
)

// buildExampleReceiver builds examples/webhook-receiver once per test binary.
func buildExampleReceiver(t *testing.T) string {
	t.Helper()
	receiverOnce.Do(func() {
		root, err := testenv.ModuleRoot()
		if err != nil {
			receiverErr = err
			return
		}
		dir, err := os.MkdirTemp("", "webhook-receiver")
		if err != nil {
			receiverErr = err
			return
		}
		receiverBin = filepath.Join(dir, "webhook-receiver")
		cmd := exec.Command("go", "build", "-o", receiverBin, "./examples/webhook-receiver")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			receiverErr = fmt.Errorf("building examples/webhook-receiver: %w\n%s", err, out)
		}
	})
	if receiverErr != nil {
		t.Fatal(receiverErr)
	}
	return receiverBin
}

// exampleReceiver is examples/webhook-receiver running as a process on
// 127.0.0.1 over TLS.
type exampleReceiver struct {
	url, addr, dir string
	ca             []byte
	log            *testenv.SyncBuffer
	cmd            *exec.Cmd
}

func startExampleReceiver(t *testing.T, secret string) *exampleReceiver {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port, err := procctl.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rc := &exampleReceiver{url: "https://" + addr + "/cleanup", addr: addr, dir: dir, ca: certPEM, log: &testenv.SyncBuffer{}}
	t.Cleanup(rc.stop)
	rc.start(t, secret)
	return rc
}

// start runs the receiver with secret, on its address and certificate.
func (rc *exampleReceiver) start(t *testing.T, secret string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(rc.dir, "secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	rc.cmd = exec.Command(buildExampleReceiver(t), "--addr="+rc.addr, "--secret-file="+filepath.Join(rc.dir, "secret"),
		"--tls-cert="+filepath.Join(rc.dir, "tls.crt"), "--tls-key="+filepath.Join(rc.dir, "tls.key"))
	rc.cmd.Stdout, rc.cmd.Stderr = rc.log, rc.log
	if err := rc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(rc.ca)
	testenv.Eventually(t, 20*time.Second, "the example receiver to serve TLS", func(ctx context.Context) (bool, error) {
		conn, err := (&tls.Dialer{Config: &tls.Config{RootCAs: pool}}).DialContext(ctx, "tcp", rc.addr)
		if err != nil {
			return false, nil
		}
		_ = conn.Close()
		return true, nil
	})
}

func (rc *exampleReceiver) stop() {
	if rc.cmd != nil && rc.cmd.Process != nil {
		_ = rc.cmd.Process.Kill()
		_ = rc.cmd.Wait()
	}
}

// webhookIDs are the webhook-ids the receiver logged (every request is
// logged with its id before it is verified).
func (rc *exampleReceiver) webhookIDs() map[string]bool {
	ids := map[string]bool{}
	for _, f := range strings.Fields(rc.log.String()) {
		if id, ok := strings.CutPrefix(f, "webhookID="); ok {
			ids[id] = true
		}
	}
	return ids
}

// TestExampleReceiverAcceptsTheController: examples/webhook-receiver, which
// verifies with the Standard Webhooks library only, accepts the controller's
// real calls for a whsec_ secret (held in the Secret as made from a file,
// with a newline) and for a raw secret: the step succeeds and the object
// goes. The negative control: the same receiver with another secret refuses
// the call (401, a definitive failure: the object stays), and once it is
// given the right secret the retried call of the same delivery (same
// webhook-id) is accepted.
func TestExampleReceiverAcceptsTheController(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNamespace(t, k8s)
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterResourceNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	whsec := "whsec_" + base64.StdEncoding.EncodeToString([]byte("standard-webhooks-key-"+ns))
	for _, tc := range []struct {
		name, stored, receiverSecret string
		refused                      bool
	}{
		{name: "whsec", stored: whsec + "\n", receiverSecret: whsec + "\n"},
		{name: "raw", stored: "raw-secret-" + ns, receiverSecret: "raw-secret-" + ns},
		{name: "wrong", stored: whsec, receiverSecret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), refused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := startExampleReceiver(t, tc.receiverSecret)
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "sw-" + tc.name + "-" + ns, Namespace: clusterResourceNamespace},
				Data:       map[string][]byte{"secret": []byte(tc.stored)},
			}
			create(t, secret)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
			app := "sw-" + tc.name
			pol := &teardownv1alpha1.ClusterTeardownPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: app + "-" + ns},
				Spec: teardownv1alpha1.TeardownPolicySpec{
					Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap", Selector: selector("app", app),
						NamespaceSelector: selector("kubernetes.io/metadata.name", ns)}},
					Steps: []teardownv1alpha1.Step{{Name: "notify", Webhook: &teardownv1alpha1.WebhookAction{
						URL: &rc.url, CABundle: rc.ca, SigningSecretRef: &teardownv1alpha1.SecretKeyReference{Name: secret.Name},
					}}},
				},
			}
			create(t, pol)
			t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
			mustBeReady(t, pol)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, Labels: map[string]string{"app": app}}}
			create(t, cm)
			testenv.Eventually(t, 20*time.Second, "the finalizer on the ConfigMap", hasFinalizer(cm, "teardown.dev/"+pol.Name))
			del(t, cm)
			if tc.refused {
				testenv.Eventually(t, 20*time.Second, "the receiver to refuse the call", func(context.Context) (bool, error) {
					return strings.Contains(rc.log.String(), "Refused an unsigned or badly signed request"), nil
				})
				if ok, err := hasFinalizer(cm, "teardown.dev/"+pol.Name)(t.Context()); err != nil || !ok {
					t.Fatalf("after a refused call the ConfigMap lost its finalizer (%v)", err)
				}
				if strings.Contains(rc.log.String(), "Cleanup request") {
					t.Fatalf("the receiver ran its cleanup for a refused call:\n%s", rc.log.String())
				}
				// The right secret: the same delivery, retried, is accepted.
				rc.stop()
				rc.start(t, tc.stored)
				testenv.Eventually(t, 60*time.Second, "the ConfigMap to be gone", testenv.Gone(k8s, cm))
				if ids := rc.webhookIDs(); len(ids) != 1 {
					t.Errorf("the refused and the accepted calls carried the webhook-ids %v, want one", ids)
				}
			} else {
				testenv.Eventually(t, 20*time.Second, "the ConfigMap to be gone", testenv.Gone(k8s, cm))
			}
			if log := rc.log.String(); !strings.Contains(log, "Cleanup request") || !strings.Contains(log, "webhookID=td_") || !strings.Contains(log, "status=Success") {
				t.Errorf("the receiver did not log an accepted call:\n%s", log)
			}
		})
	}
}
