/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package admission

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestMetricsNeedAuthorization starts the teardown-controller's manager as
// main does by default (metrics secure): /metrics answers 401 without a
// token, 403 to a ServiceAccount without the shipped metrics-reader role,
// and the metrics to one bound to it.
func TestMetricsNeedAuthorization(t *testing.T) {
	testenv.SkipShort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	mgr, err := controller.NewManager(env.Config, controller.ManagerOptions{MetricsAddr: addr, Controller: controller.DefaultOptions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	// The shipped metrics-reader role, bound to one ServiceAccount.
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "metrics_reader_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := newNamespace(t)
	token := func(sa string) string {
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	scraper, nobody := token("prometheus"), token("nobody")
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	access := testenv.Access(rbacv1.ServiceAccountKind, ns, "prometheus", authorizationv1.ResourceAttributes{})
	access.ResourceAttributes, access.NonResourceAttributes = nil, &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/metrics"}
	if err := testenv.WaitAllowed(t.Context(), admin, access); err != nil {
		t.Fatal(err)
	}

	// The certificate is self-signed: the scraper is told to skip its
	// check, as a ServiceMonitor with insecureSkipVerify would.
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	get := func(token string) (int, string, error) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	testenv.Eventually(t, 30*time.Second, "the metrics endpoint", func(context.Context) (bool, error) {
		_, _, err := get("")
		return err == nil, nil
	})
	// Authorization decisions are cached briefly by the filter; each
	// identity is asked once, after the binding exists.
	for _, tc := range []struct {
		who   string
		token string
		code  int
	}{{"no token", "", http.StatusUnauthorized}, {"a ServiceAccount without metrics-reader", nobody, http.StatusForbidden}, {"the scraper", scraper, http.StatusOK}} {
		code, body, err := get(tc.token)
		if err != nil || code != tc.code {
			t.Errorf("%s: %d %v, want %d\n%.300s", tc.who, code, err, tc.code, body)
		}
		if code == http.StatusOK && !strings.Contains(body, "controller_runtime_") {
			t.Errorf("%s: no metrics in the answer:\n%.300s", tc.who, body)
		}
	}
	// Plain HTTP gets nothing.
	if resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP served the metrics")
		}
	}
}
