#!/usr/bin/env bash
# Builds helm 4, pinned in hack/tools/helm4/go.mod, into bin/helm4/helm (only when
# missing; make test-compat runs the chart tests with it). Stamped as helm's
# own Makefile does: its version, and empty build metadata for a release.
# Helm 4 reads the Kubernetes version it assumes without a cluster from the
# client-go it is built with, so that needs no flag (helm 3 does: hack/helm.sh).
set -euo pipefail

root=$(cd "$(dirname "$0")/../../.." && pwd)
out="$root/bin/helm4/helm"
if [[ -x "$out" ]]; then exit 0; fi
cd "$root/hack/tools/helm4"
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v4)
v=helm.sh/helm/v4/internal/version
mkdir -p "$root/bin/helm4"
echo "building helm $version into bin/helm4/helm" >&2
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X $v.version=$version -X $v.metadata= -X $v.gitTreeState=clean" \
	-o "$out.tmp" helm.sh/helm/v4/cmd/helm
mv "$out.tmp" "$out"
