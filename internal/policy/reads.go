/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"maps"
	"slices"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Fields is what a wait step's condition reads of each selected object: a
// tree of field names. The nil *Fields reads nothing of an object (the
// condition only counts them); Whole reads all of it; otherwise only the
// fields in Sub, each with what is read of it. A wait step keeps only these
// fields of what it lists, so what it holds is bounded by what its condition
// needs, not by the size of the objects.
type Fields struct {
	Whole bool
	Sub   map[string]*Fields
}

// MetadataOnly reports whether nothing outside metadata (and apiVersion,
// kind) is read: the step can list metadata only.
func (f *Fields) MetadataOnly() bool {
	if f == nil {
		return true
	}
	if f.Whole {
		return false
	}
	for name := range f.Sub {
		if name != "metadata" && name != "apiVersion" && name != "kind" {
			return false
		}
	}
	return true
}

// Project returns the part of obj (an object as the API's JSON decodes)
// that f reads. It shares what it keeps with obj.
func (f *Fields) Project(obj map[string]any) map[string]any {
	out := map[string]any{}
	if f == nil {
		return out
	}
	if f.Whole {
		return obj
	}
	for name, sub := range f.Sub {
		v, ok := obj[name]
		if !ok {
			continue
		}
		if m, isMap := v.(map[string]any); isMap && !sub.Whole {
			v = sub.Project(m)
		}
		out[name] = v
	}
	return out
}

// String is the fields read, in a stable order (as a cache key).
func (f *Fields) String() string {
	switch {
	case f == nil:
		return ""
	case f.Whole:
		return "*"
	}
	var b strings.Builder
	b.WriteString("{")
	for i, name := range slices.Sorted(maps.Keys(f.Sub)) {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(name)
		b.WriteString(f.Sub[name].String())
	}
	b.WriteString("}")
	return b.String()
}

// mark records that path (field names from the object's root) is read
// whole.
func (f *Fields) mark(path []string) {
	for _, name := range path {
		if f.Whole {
			return
		}
		if f.Sub == nil {
			f.Sub = map[string]*Fields{}
		}
		next := f.Sub[name]
		if next == nil {
			next = &Fields{}
			f.Sub[name] = next
		}
		f = next
	}
	f.Whole, f.Sub = true, nil
}

// ConditionReads returns what the compiled condition expr reads of each
// object: its checked AST is walked for the paths taken from an element of
// objects (o.status.phase, o.metadata.labels["x"]). A path is read whole
// where it is used in any other way (compared, passed to a function,
// iterated); objects itself used other than for its size, its elements,
// or in a comprehension, is read whole. Anything not understood reads the
// whole object: the analysis may keep too much, never too little.
func ConditionReads(expr string) (*Fields, error) {
	ast, issues := conditionEnv.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, issues.Err()
	}
	w := &readsWalker{fields: &Fields{}}
	w.consume(w.walk(ast.NativeRep().Expr(), map[string]*ref{"objects": {list: true}}))
	if w.fields.Sub == nil && !w.fields.Whole {
		return nil, nil
	}
	return w.fields, nil
}

// ref is a value that is part of the objects: the list of them (list,
// path empty), or a list of values at path in each, or the value at path
// of one object.
type ref struct {
	list bool
	path []string
}

func (r *ref) with(name string) *ref {
	return &ref{path: append(slices.Clip(r.path), name)}
}

type readsWalker struct {
	fields *Fields
}

// consume records that r's value is read whole.
func (w *readsWalker) consume(r *ref) {
	if r != nil {
		w.fields.mark(r.path)
	}
}

// walk returns the ref e evaluates to (nil when it is no part of the
// objects), recording what it reads.
func (w *readsWalker) walk(e celast.Expr, env map[string]*ref) *ref {
	switch e.Kind() {
	case celast.IdentKind:
		return env[e.AsIdent()]
	case celast.SelectKind:
		s := e.AsSelect()
		r := w.walk(s.Operand(), env)
		if r == nil {
			return nil
		}
		if r.list {
			w.consume(r)
			return nil
		}
		if s.IsTestOnly() {
			// has(o.a.b): whether b is there; keep b.
			w.consume(r.with(s.FieldName()))
			return nil
		}
		return r.with(s.FieldName())
	case celast.CallKind:
		return w.call(e.AsCall(), env)
	case celast.ComprehensionKind:
		return w.comprehension(e.AsComprehension(), env)
	case celast.ListKind:
		var elem *ref
		for _, el := range e.AsList().Elements() {
			r := w.walk(el, env)
			if r == nil {
				continue
			}
			if r.list || elem != nil && !slices.Equal(elem.path, r.path) {
				w.consume(r)
				continue
			}
			elem = r
		}
		if elem == nil {
			return nil
		}
		// [o]: a list of objects' values at the same path, as filter builds.
		return &ref{list: true, path: elem.path}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			if en.Kind() == celast.MapEntryKind {
				w.consume(w.walk(en.AsMapEntry().Key(), env))
				w.consume(w.walk(en.AsMapEntry().Value(), env))
			}
		}
		return nil
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			if f.Kind() == celast.StructFieldKind {
				w.consume(w.walk(f.AsStructField().Value(), env))
			}
		}
		return nil
	}
	return nil
}

func (w *readsWalker) call(c celast.CallExpr, env map[string]*ref) *ref {
	var args []celast.Expr
	if c.IsMemberFunction() {
		args = append(args, c.Target())
	}
	args = append(args, c.Args()...)
	refs := make([]*ref, len(args))
	for i, a := range args {
		refs[i] = w.walk(a, env)
	}
	name := c.FunctionName()
	switch {
	case name == "size" && len(refs) == 1 && refs[0] != nil && refs[0].list:
		return nil // how many, not what
	case (name == "_[_]" || name == "_[?_]") && len(refs) == 2 && refs[0] != nil:
		if refs[0].list {
			w.consume(refs[1])
			return &ref{path: refs[0].path} // one of them
		}
		if key, ok := stringLiteral(args[1]); ok {
			return refs[0].with(key)
		}
	case name == "_?._" && len(refs) == 2 && refs[0] != nil && !refs[0].list:
		if key, ok := stringLiteral(args[1]); ok {
			return refs[0].with(key)
		}
	case name == "_?_:_" && len(refs) == 3:
		w.consume(refs[0])
		if refs[1] != nil && refs[2] != nil && refs[1].list == refs[2].list && slices.Equal(refs[1].path, refs[2].path) {
			return refs[1]
		}
		if refs[1] == nil {
			return refs[2]
		}
		if refs[2] == nil {
			return refs[1]
		}
	case name == "_+_" && len(refs) == 2:
		// Lists of objects' values joined, as filter's accumulator is.
		if refs[0] != nil && refs[0].list && (refs[1] == nil || refs[1].list && slices.Equal(refs[0].path, refs[1].path)) {
			return refs[0]
		}
		if refs[1] != nil && refs[1].list && refs[0] == nil {
			return refs[1]
		}
	}
	for _, r := range refs {
		w.consume(r)
	}
	return nil
}

func (w *readsWalker) comprehension(c celast.ComprehensionExpr, outer map[string]*ref) *ref {
	rng := w.walk(c.IterRange(), outer)
	env := maps.Clone(outer)
	env[c.IterVar()], env[c.AccuVar()] = nil, nil
	if c.HasIterVar2() {
		env[c.IterVar2()] = nil
	}
	switch {
	case rng == nil:
	case rng.list && !c.HasIterVar2():
		env[c.IterVar()] = &ref{path: rng.path}
	case rng.list:
		env[c.IterVar2()] = &ref{path: rng.path}
	default:
		w.consume(rng) // a map or list inside an object: all of it
	}
	w.consume(w.walk(c.AccuInit(), outer))
	// Within the loop the accumulator may hold what the step adds to it.
	step := w.walk(c.LoopStep(), env)
	env[c.AccuVar()] = step
	w.consume(w.walk(c.LoopCondition(), env))
	if r := c.Result(); r.Kind() == celast.IdentKind && r.AsIdent() == c.AccuVar() {
		return step
	}
	w.consume(step)
	return w.walk(c.Result(), env)
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
