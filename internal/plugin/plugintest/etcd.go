/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package plugintest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// PutInEtcd overwrites the stored bytes of key in the etcd at endpoint, as
// a lost encryption key or a damaged write leaves an object: kube-apiserver
// can no longer read it. It writes through etcd's gRPC gateway (JSON over
// HTTP, on by default on the client URL) rather than with etcd's Go client,
// which would make the module require go.etcd.io/etcd/client/v3, and so
// raise the grpc and otel versions of everyone who imports pkg/finalizer.
func PutInEtcd(t testing.TB, endpoint, key string, value []byte) {
	t.Helper()
	body, err := json.Marshal(map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString(value),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/v3/kv/put", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("writing %s to etcd: %v", key, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("writing %s to etcd: %s: %s", key, resp.Status, answer)
	}
}

// Undecodable is what a damaged write leaves: bytes no codec reads.
var Undecodable = []byte("\x00garbage: not an object\xff")

// EncryptedWithLostKey is what an object encrypted at rest looks like to a
// kube-apiserver that no longer has the key (its encryption configuration
// lost or rotated without the old key): kube-apiserver's envelope prefix,
// then ciphertext.
var EncryptedWithLostKey = []byte("k8s:enc:aescbc:v1:key1:\x8a\x13\x07\xfe\x92\x11\xc4\x1b\x9e\x00\x5d\x7a\x33\x61\xf0\x0b")

// GetFromEtcd reads the stored bytes of key, so that a test that damages
// an object can put them back.
func GetFromEtcd(t testing.TB, endpoint, key string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/v3/kv/range", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", key, err)
	}
	defer resp.Body.Close()
	var got struct {
		Kvs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v (%d values)", key, err, len(got.Kvs))
	}
	value, err := base64.StdEncoding.DecodeString(got.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return value
}
