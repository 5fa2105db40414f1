/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package chart_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The media types of a chart in an OCI registry, as helm push writes it.
const (
	helmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	helmChartMediaType  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	ociManifestType     = "application/vnd.oci.image.manifest.v1+json"
)

// chartRegistry serves charts/teardown, packaged at version, as helm push
// would have put it in an OCI registry at HOST/charts/teardown:version,
// read-only, over HTTPS (helm 4 has no fallback to plain HTTP). It returns
// HOST and a CA file trusting the server, for SSL_CERT_FILE. `make e2e`
// pushes the chart with helm push to a real registry; this serves the same
// artifact to the quick start on the local control plane.
func chartRegistry(t *testing.T, version string) (host, caFile string) {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(helmPath, "package", filepath.Join(root, "charts/teardown"), "--version", version, "--app-version", version, "-d", dir).CombinedOutput(); err != nil {
		t.Fatalf("helm package: %v\n%s", err, out)
	}
	tgz, err := os.ReadFile(filepath.Join(dir, "teardown-"+version+".tgz"))
	if err != nil {
		t.Fatal(err)
	}
	chartYAML, err := os.ReadFile(filepath.Join(root, "charts/teardown/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		t.Fatal(err)
	}
	meta["version"], meta["appVersion"] = version, version
	config, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int    `json:"size"`
	}
	manifest, err := json.Marshal(struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{2, ociManifestType, desc{helmConfigMediaType, digest(config), len(config)}, []desc{{helmChartMediaType, digest(tgz), len(tgz)}}})
	if err != nil {
		t.Fatal(err)
	}
	blobs := map[string][]byte{digest(config): config, digest(tgz): tgz}
	const prefix = "/v2/charts/teardown/"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		switch p := r.URL.Path; {
		case p == "/v2/":
			w.WriteHeader(http.StatusOK)
		case p == prefix+"tags/list":
			_ = json.NewEncoder(w).Encode(map[string]any{"name": "charts/teardown", "tags": []string{version}})
		case p == prefix+"manifests/"+version || p == prefix+"manifests/"+digest(manifest):
			w.Header().Set("Content-Type", ociManifestType)
			w.Header().Set("Docker-Content-Digest", digest(manifest))
			w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
			if r.Method == http.MethodGet {
				_, _ = w.Write(manifest)
			}
		case strings.HasPrefix(p, prefix+"blobs/") && blobs[strings.TrimPrefix(p, prefix+"blobs/")] != nil:
			b := blobs[strings.TrimPrefix(p, prefix+"blobs/")]
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			if r.Method == http.MethodGet {
				_, _ = w.Write(b)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(srv.URL, "https://"), caFile
}
