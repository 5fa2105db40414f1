/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package docstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/teardown-dev/teardown/internal/testenv"
)

// TestEveryReasonIsProducedAndDocumented: api/v1alpha1/conditions.go is the
// single source of the reasons a policy's status can carry. Each one must
// be used by code outside the API package (so none is promised and never
// produced) and documented in docs/api.md and docs/controller.md.
func TestEveryReasonIsProducedAndDocumented(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	reasons := reasonConstants(t, filepath.Join(root, "api", "v1alpha1", "conditions.go"))
	if len(reasons) < 5 {
		t.Fatalf("found only %d reasons in conditions.go: %v", len(reasons), reasons)
	}
	code := nonTestGoSources(t, root)
	for _, doc := range []string{"docs/api.md", "docs/controller.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, value := range reasons {
			if !strings.Contains(string(data), "`"+value+"`") {
				t.Errorf("%s does not document reason `%s`", doc, value)
			}
		}
	}
	for name := range reasons {
		if !strings.Contains(code, "teardownv1alpha1."+name) {
			t.Errorf("reason %s is declared in conditions.go but no code outside api/ produces it", name)
		}
	}
}

// reasonConstants returns the string constants named *Reason in file.
func reasonConstants(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range spec.Names {
			if !strings.HasSuffix(id.Name, "Reason") || i >= len(spec.Values) {
				continue
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, err := strconv.Unquote(lit.Value)
				if err == nil {
					out[id.Name] = v
				}
			}
		}
		return true
	})
	return out
}

// nonTestGoSources concatenates the Go files of internal/ and pkg/ that are
// not tests.
func nonTestGoSources(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range []string{"internal", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			b.Write(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
