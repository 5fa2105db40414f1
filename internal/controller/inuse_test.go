/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package controller_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	teardownv1alpha1 "github.com/teardown-dev/teardown/api/v1alpha1"
	"github.com/teardown-dev/teardown/internal/admit"
	"github.com/teardown-dev/teardown/internal/testenv"
)

// inUseRefusal is the start of the refusal of a pod that would use Secret
// name while it is torn down.
func inUseRefusal(name string) string { return fmt.Sprintf("Secret %q is being deleted", name) }

// inUseOff runs the suite as a cluster that opted out of the in-use webhook
// (inUseWebhook.enabled=false): TEARDOWN_TEST_INUSE_WEBHOOK=off. The
// negative control of TestUnusedNewPodRace, which then finds Secrets lost.
var inUseOff = os.Getenv("TEARDOWN_TEST_INUSE_WEBHOOK") == "off"

// installInUseWebhook creates the in-use webhook's configuration as
// config/webhook/inuse and the chart ship it (every pod but those of
// kube-system and teardown-system, failurePolicy Ignore, no matchConditions
// of the installer's), calling the suite's webhook server: the controller
// narrows it.
func installInUseWebhook(ctx context.Context) error {
	url := webhookHost + admit.InUsePath
	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: admit.InUseConfiguration},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: admit.InUseWebhookName, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: webhookCA},
			Rules: []admissionregistrationv1.RuleWithOperations{
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
				{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/ephemeralcontainers"}}},
			},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{metav1.NamespaceSystem, "teardown-system"},
			}}},
			FailurePolicy: &ignore, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To[int32](5),
		}},
	}
	if err := k8s.Delete(ctx, vwc.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", vwc.Name, err)
	}
	return k8s.Create(ctx, vwc)
}

// heldNamespaces reads the namespaces the controller keeps in the in-use
// webhook's configuration.
func heldNamespaces(ctx context.Context) ([]string, error) {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: admit.InUseConfiguration}, vwc); err != nil {
		return nil, err
	}
	for _, w := range vwc.Webhooks {
		if w.Name == admit.InUseWebhookName {
			ns, all := admit.HeldNamespaces(w.MatchConditions)
			if all {
				return nil, fmt.Errorf("the in-use webhook asks about every pod")
			}
			return ns, nil
		}
	}
	return nil, fmt.Errorf("no webhook %s", admit.InUseWebhookName)
}

// refusesNewUsers waits until the API server calls the in-use webhook for
// the pods of ns and refuses a dry-run pod that would use Secret name, held
// and being deleted.
func refusesNewUsers(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, "the in-use webhook to refuse a new user of Secret "+name, func(ctx context.Context) (bool, error) {
		err := k8s.Create(ctx, podUsingSecret(ns, "probe-newcomer", name), client.DryRunAll)
		if err == nil {
			return false, nil // not called yet
		}
		if strings.Contains(err.Error(), inUseRefusal(name)) {
			return true, nil
		}
		return false, err
	})
}

// inUseCalls counts the calls the suite's webhook server answered on the
// in-use webhook's path (controller-runtime's
// controller_runtime_webhook_requests_total).
func inUseCalls(t *testing.T) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == admit.InUsePath {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// podUsingSecret is a pod of ns that mounts Secret secret. No kubelet
// runs here: it stays Pending, existing, until deleted.
func podUsingSecret(ns, name, secret string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "c:1"}},
		Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
	}}
}

// TestInUseWebhookRefusesNewUses: with the in-use webhook, a pod that would
// start using a Secret an unused step holds while it is torn down is
// refused, at create and through an ephemeral container, with a message
// that names the Secret; a pod that uses a live Secret is admitted.
func TestInUseWebhookRefusesNewUses(t *testing.T) {
	testenv.SkipShort(t)
	if inUseOff {
		t.Skip("the suite runs without the in-use webhook (TEARDOWN_TEST_INUSE_WEBHOOK=off)")
	}
	ns := testenv.NewNamespace(t, k8s)
	app := "inuse-" + ns
	labels := map[string]string{"app": app}
	pol := serveUnusedPolicy(t, "inuse-"+ns, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, Labels: labels}}
	live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "live-creds", Namespace: ns, Labels: labels}}
	create(t, secret)
	create(t, live)
	holder := podUsingSecret(ns, "holder", secret.Name)
	holder.Finalizers = []string{kubeletHold}
	create(t, holder)
	bystander := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "c:1"}}}}
	create(t, bystander)
	testenv.Eventually(t, 20*time.Second, "the finalizer on the Secret", hasFinalizer(secret, key))
	testenv.Eventually(t, 20*time.Second, "the finalizer on the live Secret", hasFinalizer(live, key))
	del(t, secret)
	// The controller puts the namespace in the webhook's configuration
	// when the step starts; the API server sees it moments later.
	refusesNewUsers(t, ns, secret.Name)

	t.Run("a new pod that would use it is refused", func(t *testing.T) {
		err := k8s.Create(t.Context(), podUsingSecret(ns, "newcomer", secret.Name))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), inUseRefusal(secret.Name)) {
			t.Fatalf("creating a pod that uses the held Secret: %v, want Forbidden with %q", err, inUseRefusal(secret.Name))
		}
		t.Logf("refused: %v", err)
		if strings.Contains(err.Error(), pol.Name) {
			t.Errorf("the refusal names the ClusterTeardownPolicy: %v", err)
		}
	})
	t.Run("an ephemeral container that would use it is refused", func(t *testing.T) {
		debug := bystander.DeepCopy()
		debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}}}},
		}}}
		err := k8s.SubResource("ephemeralcontainers").Update(t.Context(), debug)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), inUseRefusal(secret.Name)) {
			t.Fatalf("adding an ephemeral container that uses the held Secret: %v, want Forbidden with %q", err, inUseRefusal(secret.Name))
		}
	})
	t.Run("a pod that uses a live Secret is admitted", func(t *testing.T) {
		create(t, podUsingSecret(ns, "user-of-live", live.Name))
	})
	allStay(t, "the holder runs", secret)
	del(t, holder)
	releasePod(t, holder)
	goneWithin(t, 10*time.Second, "the Secret", secret)
}

// deletions records the revision at which each Secret of a namespace was
// removed, from a watch: a DELETED event carries the revision of the
// removal as its object's resourceVersion. Revisions are compared as
// numbers, which the API calls opaque; the storage behind this test
// (etcd) orders them so.
type deletions struct {
	mu      sync.Mutex
	removed map[string]int64
}

func (d *deletions) revision(name string) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.removed[name]
}

func watchDeletions(t *testing.T, ns string) *deletions {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &corev1.SecretList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	d := &deletions{removed: map[string]int64{}}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok || ev.Type != watch.Deleted {
				continue
			}
			rv, err := strconv.ParseInt(s.ResourceVersion, 10, 64)
			if err != nil {
				continue
			}
			d.mu.Lock()
			d.removed[s.Name] = rv
			d.mu.Unlock()
		}
	}()
	return d
}

// TestUnusedNewPodRace is issue 16's race, repeated: a pod that uses a
// Secret is created right after, or at the same moment as, the Secret's
// deletion. Whatever the order, the Secret must never be removed after a
// pod that uses it was stored, while that pod exists and is not being
// deleted: the pod is either refused (its check saw the deletion), seen by
// the step's confirming list (its check came before the deletion, or the
// API server did not ask the webhook about it yet because the configuration
// did not name the namespace yet, and the list waits out the grace after
// both), or stored after the Secret was gone (a pod may always name a
// Secret that does not exist). The webhook's configuration is the shipped
// one, which the controller narrows: the namespace is not in it until the
// first deletion. Run with TEARDOWN_TEST_INUSE_WEBHOOK=off (the opt-out),
// it fails: the negative control.
func TestUnusedNewPodRace(t *testing.T) {
	testenv.SkipShort(t)
	const rounds = 30
	ns := testenv.NewNamespace(t, k8s)
	app := "race-" + ns
	labels := map[string]string{"app": app}
	pol := serveUnusedPolicy(t, "race-"+ns, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name

	deletions := watchDeletions(t, ns)
	var refused, held, after, violations int
	for i := range rounds {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("creds-%d", i), Namespace: ns, Labels: labels}}
		create(t, secret)
		testenv.Eventually(t, 20*time.Second, "the finalizer on "+secret.Name, hasFinalizer(secret, key))
		pod := podUsingSecret(ns, fmt.Sprintf("user-%d", i), secret.Name)
		var err error
		if i%2 == 0 {
			// The order: the pod right after the deletion.
			del(t, secret)
			err = k8s.Create(t.Context(), pod)
		} else {
			// Both at once, the deletion a little later or sooner, so that
			// some pods are checked before the deletion and stored after.
			var wg sync.WaitGroup
			var delErr error
			wg.Go(func() {
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
				delErr = k8s.Delete(t.Context(), secret)
			})
			err = k8s.Create(t.Context(), pod)
			wg.Wait()
			if delErr != nil {
				t.Fatalf("deleting %s: %v", secret.Name, delErr)
			}
		}
		switch {
		case err == nil:
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), inUseRefusal(secret.Name)):
			refused++
			goneWithin(t, 10*time.Second, secret.Name+", which no pod uses", secret)
			continue
		default:
			t.Fatalf("creating %s: %v", pod.Name, err)
		}
		// The pod exists: the Secret must stay. A wrong release comes
		// within the grace and its second after the deletion.
		deadline := time.Now().Add(3 * time.Second)
		removed := int64(0)
		for removed == 0 && time.Now().Before(deadline) {
			removed = deletions.revision(secret.Name)
			time.Sleep(5 * time.Millisecond)
		}
		created, err := strconv.ParseInt(pod.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case removed == 0:
			held++
		case removed > created:
			violations++
			t.Errorf("round %d: %s went (revision %d) after pod %s, which uses it, was stored (revision %d), while it exists and is not being deleted",
				i, secret.Name, removed, pod.Name, created)
		default:
			// Gone before the pod was stored: the pod waits for a
			// Secret that does not exist, as any pod may.
			after++
		}
		del(t, pod)
		goneWithin(t, 10*time.Second, secret.Name+" after its pod", secret)
	}
	t.Logf("%d rounds: %d pods refused, %d admitted and held the Secret, %d admitted after the Secret was gone, %d Secrets went after a pod that uses them was stored",
		rounds, refused, held, after, violations)
}

// TestInUseWebhookAsksOnlyAboutHeldNamespaces: with the shipped
// configuration narrowed by the controller, the API server calls the in-use
// webhook only for pods of a namespace where an unused step holds an
// object being deleted: none while nothing is held, none for another
// namespace's pods while it is, one per pod of the held namespace.
func TestInUseWebhookAsksOnlyAboutHeldNamespaces(t *testing.T) {
	testenv.SkipShort(t)
	if inUseOff {
		t.Skip("the suite runs without the in-use webhook (TEARDOWN_TEST_INUSE_WEBHOOK=off)")
	}
	const pods = 10
	held, elsewhere := testenv.NewNamespace(t, k8s), testenv.NewNamespace(t, k8s)
	app := "calls-" + held
	pol := serveUnusedPolicy(t, "calls-"+held, teardownv1alpha1.Target{APIVersion: "v1", Kind: "Secret", Selector: selector("app", app)})
	key := "teardown.dev/" + pol.Name
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: held, Labels: map[string]string{"app": app}}}
	create(t, secret)
	holder := podUsingSecret(held, "holder", secret.Name)
	holder.Finalizers = []string{kubeletHold}
	create(t, holder)
	testenv.Eventually(t, 20*time.Second, "the finalizer on the Secret", hasFinalizer(secret, key))

	// took is each round's pod creations, one after another, for the log.
	took := map[string]time.Duration{}
	createPods := func(ns, prefix string) float64 {
		t.Helper()
		before, start := inUseCalls(t), time.Now()
		for i := range pods {
			create(t, podUsingSecret(ns, fmt.Sprintf("%s-%d", prefix, i), "other"))
		}
		took[prefix] = time.Since(start) / pods
		return inUseCalls(t) - before
	}
	if calls := createPods(held, "before"); calls != 0 {
		t.Errorf("nothing held yet: %d pods of the guarded namespace cost %v webhook calls, want 0", pods, calls)
	}

	del(t, secret)
	refusesNewUsers(t, held, secret.Name)
	got, err := heldNamespaces(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, held) || slices.Contains(got, elsewhere) {
		t.Errorf("the webhook asks about the pods of %v, want %s's and not %s's", got, held, elsewhere)
	}
	if calls := createPods(elsewhere, "elsewhere"); calls != 0 {
		t.Errorf("while %s holds a Secret, %d pods of another namespace cost %v webhook calls, want 0", held, pods, calls)
	}
	if calls := createPods(held, "during"); calls != pods {
		t.Errorf("while it holds a Secret, %d pods of the namespace cost %v webhook calls, want one each", pods, calls)
	}
	t.Logf("%d pods each: %s before the deletion (%s a create) and %s during it (%s), 0 calls; %s during it, %d calls (%s a create)",
		pods, held, took["before"], elsewhere, took["elsewhere"], held, pods, took["during"])

	t.Run("the condition takes the most namespaces it names", func(t *testing.T) {
		names := make([]string, admit.MaxCoveredNamespaces)
		for i := range names {
			names[i] = fmt.Sprintf("%s-%05d", strings.Repeat("n", 57), i)
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: admit.InUseConfiguration}, vwc); err != nil {
			t.Fatal(err)
		}
		vwc.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: admit.HeldNamespacesCondition, Expression: admit.HeldExpression(names, false)}}
		if err := k8s.Update(t.Context(), vwc, client.DryRunAll); err != nil {
			t.Errorf("the API server refuses a condition naming %d namespaces: %v", len(names), err)
		}
	})

	del(t, holder)
	releasePod(t, holder)
	goneWithin(t, 10*time.Second, "the Secret", secret)
}
