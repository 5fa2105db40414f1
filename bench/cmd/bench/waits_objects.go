/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// createPair creates target i and its user.
func (b *bench) createPair(ctx context.Context, sc waitScenario, i int) error {
	ns := waitNamespace(i)
	var err error
	if sc.unused {
		_, err = b.kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
			Name: sc.name, Labels: map[string]string{waitTargetLabel: sc.name}}}, metav1.CreateOptions{})
		if err == nil {
			_, err = b.kube.CoreV1().Pods(ns).Create(ctx, userPod(ns, sc.name, sc.name), metav1.CreateOptions{})
		}
	} else {
		_, err = b.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "user-" + sc.name, Labels: map[string]string{waitUserLabel: sc.name}}}, metav1.CreateOptions{})
		if err == nil {
			_, err = b.kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: sc.name, Labels: map[string]string{waitTargetLabel: sc.name}}}, metav1.CreateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("creating the target and user of %s in %s: %w", sc.name, ns, err)
	}
	return nil
}

// userPod is a pod running as ServiceAccount sa: never scheduled (there is
// no scheduler nor kubelet), so it exists, counts as a user, and goes at
// once when deleted.
func userPod(ns, name, sa string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{waitUserLabel: name}},
		Spec: corev1.PodSpec{ServiceAccountName: sa, AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

func (b *bench) deleteTarget(ctx context.Context, sc waitScenario, i int) error {
	err := b.meta.Resource(sc.targetResource()).Namespace(waitNamespace(i)).Delete(ctx, sc.name, metav1.DeleteOptions{})
	if err != nil {
		return fmt.Errorf("deleting the target of %s in %s: %w", sc.name, waitNamespace(i), err)
	}
	return nil
}

func (b *bench) deleteUser(ctx context.Context, sc waitScenario, i int) error {
	var err error
	if sc.unused {
		err = b.kube.CoreV1().Pods(waitNamespace(i)).Delete(ctx, sc.name, metav1.DeleteOptions{})
	} else {
		err = b.kube.CoreV1().ConfigMaps(waitNamespace(i)).Delete(ctx, "user-"+sc.name, metav1.DeleteOptions{})
	}
	if err != nil {
		return fmt.Errorf("deleting the user of %s in %s: %w", sc.name, waitNamespace(i), err)
	}
	return nil
}
