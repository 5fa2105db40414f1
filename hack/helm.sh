#!/usr/bin/env bash
# Builds helm, pinned in hack/tools/helm/go.mod, into bin/helm (make helm; the
# chart tests run it when bin/helm is missing). Stamped as helm's own Makefile
# does: its version, and the Kubernetes version `helm template` and
# `helm lint` assume without a cluster (that of helm's client-go).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/hack/tools/helm"
version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3)
k8s=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.MINOR.PATCH
minor=${k8s#v0.}; minor=${minor%%.*}
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldflags="$ldflags -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
done
mkdir -p "$root/bin"
echo "building helm $version into bin/helm" >&2
CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$root/bin/helm.tmp" helm.sh/helm/v3/cmd/helm
mv "$root/bin/helm.tmp" "$root/bin/helm"
