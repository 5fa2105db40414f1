/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package recordseal

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultSecret is the Secret of the controller's namespace that holds the
// keys (--record-keys-secret).
const DefaultSecret = "teardown-record-keys"

// Load reads the keys from Secret namespace/name, each data entry a key
// named by its entry, and makes the Secret with one new key when there is
// none (two replicas starting at once: one makes it, both read it). The
// Secret's creation is when records began to be sealed (Keyring.Since).
func Load(ctx context.Context, r client.Reader, w client.Writer, namespace, name string, now func() time.Time) (*Keyring, error) {
	secret := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		secret, err = create(ctx, r, w, namespace, name, now())
	}
	if err != nil {
		return nil, fmt.Errorf("reading the record keys (Secret %s/%s): %w", namespace, name, err)
	}
	k, err := New(secret.Data, secret.CreationTimestamp.Time)
	if err != nil {
		return nil, fmt.Errorf("the record keys (Secret %s/%s): %w", namespace, name, err)
	}
	return k, nil
}

// create makes the Secret with one key named by today's date, or reads the
// one another replica made first.
func create(ctx context.Context, r client.Reader, w client.Writer, namespace, name string, now time.Time) (*corev1.Secret, error) {
	key := make([]byte, minKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "teardown-controller"}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{now.UTC().Format(time.DateOnly): key},
	}
	err := w.Create(ctx, secret)
	if apierrors.IsAlreadyExists(err) {
		secret = &corev1.Secret{}
		err = r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	}
	return secret, err
}
