/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/chart"
	"github.com/teardown-dev/teardown/internal/controller"
	"github.com/teardown-dev/teardown/internal/testenv"
	"github.com/teardown-dev/teardown/internal/testenv/procctl"
)

var env *testenv.Env

// cluster is what the install tests share.
type cluster struct {
	t     *testing.T
	admin client.Client
	dir   string
	bin   string // teardown-controller, built from this tree
}

func newCluster(t *testing.T) *cluster {
	scheme, err := controller.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Built once per test binary (procctl.Build), so into the control
	// plane's folder, which outlives every test's.
	bin, err := procctl.Build(env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{t: t, admin: admin, dir: dir, bin: bin}
}

// kubeconfigAs writes a kubeconfig of the admin that impersonates user, as
// a pod running as that identity would authenticate.
func (c *cluster) kubeconfigAs(user string) (string, *rest.Config) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	path := filepath.Join(c.dir, strings.NewReplacer(":", "_").Replace(user)+".kubeconfig")
	if err := procctl.WriteKubeconfig(cfg, path); err != nil {
		c.t.Fatal(err)
	}
	return path, cfg
}

func (c *cluster) kubectl(stdin []byte, args ...string) {
	c.t.Helper()
	assets, err := testenv.AssetsDir()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(assets, "kubectl"), append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *cluster) helm(args ...string) []byte {
	c.t.Helper()
	return helm(c.t, append(args, "--kubeconfig", env.Kubeconfig)...)
}

// startController runs the teardown-controller out of process as the
// chart's ServiceAccount, with the flags of the Deployment the chart
// rendered (less those that only make sense in a pod).
func (c *cluster) startController(name string, valuesArgs ...string) *procctl.Controller {
	c.t.Helper()
	d := find(render(c.t, valuesArgs...), "Deployment", "teardown-controller")
	sa := fmt.Sprint(get(d, "spec", "template", "spec", "serviceAccountName"))
	var args []string
	for _, a := range toStrings(get(d, "spec", "template", "spec", "containers", 0, "args")) {
		if a == "--leader-elect" || strings.HasPrefix(a, "--metrics-") || strings.HasPrefix(a, "--health-probe") ||
			strings.HasPrefix(a, "--webhook-port") || strings.HasPrefix(a, "--webhook-cert-dir") || strings.HasPrefix(a, "--attach-webhook") {
			continue
		}
		args = append(args, a)
	}
	if slices.Contains(args, "--inuse-webhook") {
		// The in-use webhook (on by default) is served on a loopback port
		// with a certificate of its own: no pod runs here, so the API
		// server's calls to the chart's Service fail and, failurePolicy
		// Ignore, admit. What matters is that the controller keeps the
		// configuration with the chart's RBAC (installUninstallWithHook).
		args = append(args, "--webhook-port="+strconv.Itoa(freePort(c.t)), "--webhook-cert-dir="+servingCert(c.t, c.dir, name))
	}
	_, cfg := c.kubeconfigAs("system:serviceaccount:" + releaseNS + ":" + sa)
	ctl, err := procctl.New(procctl.Options{Name: name, Dir: c.dir, Config: cfg, LeaderElectionNamespace: releaseNS, Args: args})
	if err != nil {
		c.t.Fatal(err)
	}
	if err := ctl.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = ctl.Stop(10 * time.Second) })
	if _, err := procctl.WaitLeader(context.Background(), 60*time.Second, ctl); err != nil {
		c.t.Fatalf("%v\n%s", err, ctl.LogTail(30))
	}
	return ctl
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// servingCert writes a self-signed tls.crt and tls.key for 127.0.0.1 into a
// folder of dir named after the controller, and returns it.
func servingCert(t *testing.T, dir, name string) string {
	t.Helper()
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, name+"-webhook-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for file, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certDir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certDir
}

// guard makes a namespace whose ConfigMaps labelled app=shop a TeardownPolicy
// guards, acting as ServiceAccount sa of the namespace, and returns the
// namespace, the policy's key and a ConfigMap it guards.
func (c *cluster) guard(ctl *procctl.Controller, sa string) (string, string, *corev1.ConfigMap) {
	t := c.t
	ns := testenv.NewNamespace(t, c.admin)
	if sa != "default" {
		if err := c.admin.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
		if err := testenv.GrantServiceAccount(t.Context(), c.admin, ns, sa, "edit"); err != nil {
			t.Fatal(err)
		}
	}
	p := &teardownv1alpha1.TeardownPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: teardownv1alpha1.TeardownPolicySpec{Targets: []teardownv1alpha1.Target{{APIVersion: "v1", Kind: "ConfigMap",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}}}}},
	}
	if err := c.admin.Create(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the policy to be Ready", func(ctx context.Context) (bool, error) {
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(p.Status.Conditions, teardownv1alpha1.ReadyCondition), nil
	})
	key := ns + ".teardown.dev/shop"
	newGuarded := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "shop"}}}
		if err := c.admin.Create(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the key on ConfigMap "+name, func(ctx context.Context) (bool, error) {
			err := c.admin.Get(ctx, client.ObjectKeyFromObject(cm), cm)
			return err == nil && slices.Contains(cm.Finalizers, key), err
		})
		return cm
	}
	// End to end: a guarded object is deleted once its cleanup ran.
	gone := newGuarded("deleted")
	if err := c.admin.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the deleted guarded ConfigMap to go", testenv.Gone(c.admin, gone))
	if ctl != nil && !ctl.Running() {
		t.Fatalf("the controller exited:\n%s", ctl.LogTail(30))
	}
	return ns, key, newGuarded("kept")
}

// noTeardownLeft checks that no ConfigMap of ns carries a Teardown key or a
// cleanup record (progress, step), that no policy is left and that the CRDs
// remain. The attached record (attached.finalizer.teardown.dev/) goes with
// the key it records.
func (c *cluster) noTeardownLeft(ns, key string) {
	t := c.t
	var cms corev1.ConfigMapList
	if err := c.admin.List(t.Context(), &cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if slices.Contains(cm.Finalizers, key) {
			t.Errorf("ConfigMap %s/%s still carries %s", ns, cm.Name, key)
		}
		for _, f := range cm.Finalizers {
			if strings.Contains(f, "teardown.dev") {
				t.Errorf("ConfigMap %s/%s still carries finalizer %s", ns, cm.Name, f)
			}
		}
		for a := range cm.Annotations {
			if strings.HasPrefix(a, "progress.finalizer.teardown.dev/") || strings.HasPrefix(a, "steps.teardown.dev/") ||
				strings.HasPrefix(a, "attached.finalizer.teardown.dev/") {
				t.Errorf("ConfigMap %s/%s still carries record %s", ns, cm.Name, a)
			}
		}
	}
	var tps teardownv1alpha1.TeardownPolicyList
	if err := c.admin.List(t.Context(), &tps); err != nil {
		t.Fatal(err)
	}
	if len(tps.Items) > 0 {
		t.Errorf("%d TeardownPolicies left", len(tps.Items))
	}
	for _, crd := range []string{"teardownpolicies.teardown.dev", "clusterteardownpolicies.teardown.dev"} {
		if err := c.admin.Get(t.Context(), client.ObjectKey{Name: crd}, newCRD()); err != nil {
			t.Errorf("CRD %s: %v (crds.keep)", crd, err)
		}
	}
}

// TestInstall applies the rendered chart with a server-side dry run (default
// and non-default values), installs it for real with helm, serves a policy
// with the controller running as exactly the chart's ServiceAccount and
// RBAC, and uninstalls it: first with the pre-delete hook (the test plays
// the kubelet for the hook's Job), then, installed again with non-default
// values, with --no-hooks and the docs' recovery path.
func TestInstall(t *testing.T) {
	testenv.SkipShort(t)
	c := newCluster(t)
	monitoringCRDs, err := os.ReadFile(filepath.Join(root, "internal/chart/testdata/monitoring-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.kubectl(monitoringCRDs, "apply", "--server-side", "-f", "-")
	if err := c.admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the monitoring CRDs", func(ctx context.Context) (bool, error) {
		crd := newCRD()
		if err := c.admin.Get(ctx, client.ObjectKey{Name: "prometheusrules.monitoring.coreos.com"}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			if get(cond, "type") == "Established" && get(cond, "status") == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	for _, values := range [][]string{nil, {"-f", nonDefault}} {
		rendered := helm(t, append([]string{"template", releaseName, chart.Dir, "-n", releaseNS}, values...)...)
		c.kubectl(rendered, "apply", "--server-side", "--dry-run=server", "-f", "-")
	}

	t.Run("hook", func(t *testing.T) { c.t = t; c.installUninstallWithHook() })
	t.Run("no-hooks", func(t *testing.T) { c.t = t; c.installUninstallWithoutHook() })
}

// installUninstallWithHook: helm install with the default values, a policy
// served, helm uninstall with guarded objects present.
func (c *cluster) installUninstallWithHook() {
	t := c.t
	c.helm("install", releaseName, chart.Dir, "-n", releaseNS)
	// What a cluster admin grants: the controller may guard ConfigMaps.
	c.grantConfigMaps()
	ctl := c.startController("hook")
	ns, key, kept := c.guard(ctl, "default")
	// The in-use webhook is on by default, and the controller, with the
	// chart's RBAC, narrows it: nothing is held, so no pod is asked about.
	eventually(t, 30*time.Second, "the controller to narrow the in-use webhook", func(ctx context.Context) (bool, error) {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.admin.Get(ctx, client.ObjectKey{Name: "teardown-refuse-new-uses"}, vwc); err != nil {
			return false, err
		}
		for _, m := range vwc.Webhooks[0].MatchConditions {
			if m.Name == "held-namespaces" {
				return m.Expression == "false", nil
			}
		}
		return false, nil
	})

	// helm uninstall waits for the pre-delete hook's Job; no kubelet runs
	// here, so the test runs the Job's command as the Job's ServiceAccount
	// and then marks the Job complete, as the Job controller would.
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := helmErr("uninstall", releaseName, "-n", releaseNS, "--timeout", "2m", "--kubeconfig", env.Kubeconfig)
		done <- result{out, err}
	}()
	job := c.playUninstallHook(ctl)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("helm uninstall: %v", r.err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("helm uninstall did not return after the hook Job completed")
	}
	if err := c.admin.Get(t.Context(), client.ObjectKeyFromObject(kept), kept); err != nil {
		t.Fatalf("the guarded ConfigMap that was not deleted: %v", err)
	}
	c.noTeardownLeft(ns, key)
	eventually(t, 30*time.Second, "the hook Job to be removed (hook-succeeded)", testenv.Gone(c.admin, job))
	if err := ctl.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// playUninstallHook plays the kubelet for the pre-delete hook's Job while
// helm uninstall waits for it: it waits for the Job, runs its command as the
// Job's ServiceAccount and then marks the Job complete, as the Job
// controller would.
func (c *cluster) playUninstallHook(ctl *procctl.Controller) *batchv1.Job {
	t := c.t
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "teardown-uninstall", Namespace: releaseNS}}
	eventually(t, 60*time.Second, "the hook Job", func(ctx context.Context) (bool, error) {
		err := c.admin.Get(ctx, client.ObjectKeyFromObject(job), job)
		return err == nil, client.IgnoreNotFound(err)
	})
	// The hook runs before anything of the release goes.
	if err := c.admin.Get(t.Context(), client.ObjectKey{Namespace: releaseNS, Name: "teardown-controller"}, &corev1.ServiceAccount{}); err != nil {
		t.Fatalf("the controller's ServiceAccount went before the hook ran: %v", err)
	}
	pod := job.Spec.Template.Spec
	if len(pod.Containers) != 1 || !slices.Equal(pod.Containers[0].Command, []string{"/teardown-controller"}) {
		t.Fatalf("hook container: %+v", pod.Containers)
	}
	kubeconfig, _ := c.kubeconfigAs("system:serviceaccount:" + releaseNS + ":" + pod.ServiceAccountName)
	cmd := exec.Command(c.bin, append(slices.Clone(pod.Containers[0].Args), "--kubeconfig="+kubeconfig)...)
	out, err := cmd.CombinedOutput()
	t.Logf("hook: %s %s\n%s", pod.Containers[0].Command[0], strings.Join(pod.Containers[0].Args, " "), out)
	if err != nil {
		t.Fatalf("the hook's command failed: %v\n%s", err, ctl.LogTail(30))
	}
	if !strings.Contains(string(out), "Every policy is gone") {
		t.Errorf("hook output lacks \"Every policy is gone\"")
	}
	now := metav1.Now()
	conds, err := env.JobSucceededConditions(now)
	if err != nil {
		t.Fatal(err)
	}
	job.Status = batchv1.JobStatus{StartTime: &now, CompletionTime: &now, Succeeded: 1, Conditions: conds}
	if err := c.admin.Status().Update(t.Context(), job); err != nil {
		t.Fatalf("marking the hook Job complete: %v", err)
	}
	return job
}

// installUninstallWithoutHook: installed again with non-default values (the
// CRDs kept by the last uninstall are taken back), then helm uninstall
// --no-hooks removes the controller first and leaves the policy and its
// keys; the docs' recovery path (docs/helm.md, "Uninstalled without the
// hook") releases them.
func (c *cluster) installUninstallWithoutHook() {
	t := c.t
	c.helm("install", releaseName, chart.Dir, "-n", releaseNS, "-f", nonDefault)
	c.upgradeKeepsWebhookCertificate("-f", nonDefault)
	if err := c.admin.Get(t.Context(), client.ObjectKey{Name: "teardown-controller-targets-values"}, &rbacv1.ClusterRole{}); err != nil {
		t.Fatalf("the targetRules ClusterRole: %v", err)
	}
	ctl := c.startController("no-hooks-1", "-f", nonDefault)
	// defaultServiceAccount is "teardown" in these values.
	ns, key, kept := c.guard(ctl, "teardown")

	// helm uninstall --no-hooks removes the Deployment, so the controller
	// goes with the rest of the release (stopped first here, so that it
	// hands its Lease over while its Role still lets it).
	start := time.Now()
	if err := ctl.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.helm("uninstall", releaseName, "-n", releaseNS, "--no-hooks")
	if err := c.admin.Get(t.Context(), client.ObjectKeyFromObject(kept), kept); err != nil || !slices.Contains(kept.Finalizers, key) {
		t.Fatalf("after --no-hooks the guarded ConfigMap should still carry %s: %v %v", key, err, kept.Finalizers)
	}

	// Recovery: install the chart again, which brings the controller back
	// to serve the policies still there, run `teardown-controller uninstall`
	// with an admin's kubeconfig, then uninstall.
	c.helm("install", releaseName, chart.Dir, "-n", releaseNS, "-f", nonDefault)
	ctl = c.startController("no-hooks-2", "-f", nonDefault)
	t.Logf("controller back after %s", time.Since(start).Round(time.Millisecond))
	out, err := exec.Command(c.bin, "uninstall", "--timeout=1m", "--kubeconfig="+env.Kubeconfig).CombinedOutput()
	t.Logf("teardown-controller uninstall:\n%s", out)
	if err != nil {
		t.Fatalf("teardown-controller uninstall: %v\n%s", err, ctl.LogTail(30))
	}
	c.helm("uninstall", releaseName, "-n", releaseNS, "--no-hooks")
	if err := ctl.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	c.noTeardownLeft(ns, key)
	if err := c.admin.Get(t.Context(), client.ObjectKeyFromObject(kept), kept); apierrors.IsNotFound(err) {
		t.Error("the guarded ConfigMap that was not deleted went")
	}
}

// grantConfigMaps applies config/samples/targets_clusterrole.yaml: the
// controller may guard Services and ConfigMaps.
func (c *cluster) grantConfigMaps() {
	data, err := os.ReadFile(filepath.Join(root, "config/samples/targets_clusterrole.yaml"))
	if err != nil {
		c.t.Fatal(err)
	}
	c.kubectl(data, "apply", "--server-side", "-f", "-")
}

func newCRD() *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	return crd
}
