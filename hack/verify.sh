#!/usr/bin/env bash
# Fails if the tree is not as the generators and formatters would leave it.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	fail=1
fi
go vet ./...
make -s lint || fail=1
for mod in . bench/plot hack/cluster hack/tools hack/tools/chartschema hack/tools/controller-gen hack/tools/golangci-lint hack/tools/helm hack/tools/helm4 hack/tools/image hack/tools/k8s-1.30 hack/tools/release hack/tools/k8s-1.33 test/gitops; do
	(cd "$mod" && cp go.mod /tmp/verify.go.mod && cp go.sum /tmp/verify.go.sum && go mod tidy &&
		if ! cmp -s go.mod /tmp/verify.go.mod || ! cmp -s go.sum /tmp/verify.go.sum; then
			echo "go mod tidy changed $mod/go.mod or go.sum" >&2
			cp /tmp/verify.go.mod go.mod; cp /tmp/verify.go.sum go.sum
			exit 1
		fi) || fail=1
done
missing=$(for f in $(git ls-files '*.go'); do head -5 "$f" | grep -q 'Copyright .* The Teardown Authors' || echo "$f"; done)
if [[ -n "$missing" ]]; then
	echo "missing the hack/boilerplate.go.txt header:" >&2
	echo "$missing" >&2
	fail=1
fi
# Generated files must be what the generators make of the tree; the chart's
# CRDs, RBAC, admission policies and monitoring come from config/, and its
# values.schema.json from hack/tools/chartschema (make chart).
make -s generate manifests chart
generated=(api config/crd config/rbac charts/teardown)
if ! git diff --exit-code --stat -- "${generated[@]}" || [[ -n "$(git ls-files --others --exclude-standard -- "${generated[@]}")" ]]; then
	echo "generated files are stale: run make generate manifests chart and commit the result" >&2
	git ls-files --others --exclude-standard -- "${generated[@]}" >&2
	fail=1
fi
exit $fail
