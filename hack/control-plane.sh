#!/usr/bin/env bash
# Builds the real control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl) from the pinned Go modules in hack/tools, only what is missing.
# The binaries live in a per-version folder under the user's cache directory so
# a fresh clone on the same machine reuses them; bin/k8s links to that folder.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tools="$root/hack/tools"
version=$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/teardown/k8s-$version"
mkdir -p "$cache" "$root/bin"

# Stamp the release into the binaries, as Kubernetes' own build does, so that
# /version and kubectl's skew check see the real version instead of v0.0.0.
minor=${version#v1.}; minor=${minor%%.*}
v=k8s.io/component-base/version
ldflags="-X $v.gitVersion=$version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"

build() { # build NAME PACKAGE
	local name=$1 pkg=$2
	if [[ -x "$cache/$name" ]]; then return; fi
	echo "building $name ($pkg) into $cache" >&2
	(cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w $ldflags" -o "$cache/$name.tmp" "$pkg")
	mv "$cache/$name.tmp" "$cache/$name"
}

build etcd go.etcd.io/etcd/server/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl

ln -sfn "$cache" "$root/bin/k8s"
echo "$root/bin/k8s"
