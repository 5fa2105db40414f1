/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// ConditionCELVersion is the Kubernetes version whose CEL base environment
// wait conditions compile in: the functions policy authors know from
// ValidatingAdmissionPolicy and CRD validation rules (quantity, url, regex,
// lists, sets, the strings extension, ip and cidr, format, semver, optional
// types). It is pinned, not the version of the k8s.io/apiserver module, so
// that a dependency update never changes which conditions compile; raise it
// deliberately, and say so in CHANGELOG.md.
var ConditionCELVersion = version.MajorMinor(1, 36)

// conditionEnv declares what a wait step's condition can see: objects, the
// list of every object its resources select, each as a map like the API's
// JSON.
var conditionEnv = func() *cel.Env {
	set, err := environment.MustBaseEnvSet(ConditionCELVersion).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable("objects", cel.ListType(cel.DynType))},
	})
	if err != nil {
		panic(err)
	}
	// NewExpressions: the libraries of ConditionCELVersion, no newer (a
	// condition is compiled again at every start, so there is no stored
	// expression to keep compiling).
	env, err := set.Env(environment.NewExpressions)
	if err != nil {
		panic(err)
	}
	return env
}()

// maxConditionCost bounds one evaluation, as the API server bounds each of
// its own CEL expressions (PerCallLimit): an evaluation over its cost fails
// as "evaluation cancelled or over its cost limit", a transient error.
const maxConditionCost = celconfig.PerCallLimit

// maxEstimatedConditionCost bounds a condition's estimated worst-case cost,
// as the API server bounds a CRD validation rule's (StaticEstimatedCostLimit
// is the same 10,000,000): a condition that could cost more under the
// estimate's assumptions (conditionSizes) is refused when the policy is
// served. It catches nested loops over objects and costly functions in
// loops, which would otherwise fail only at run time, on a big list.
const maxEstimatedConditionCost = 10 * celconfig.PerCallLimit

// The sizes the cost estimate assumes, since objects is a list of untyped
// maps: how many objects a wait step's resources select, and how long a
// string, list or map inside one of them, or made from one (split, find,
// url(...).getHostname()), is.
const (
	estimatedObjects   = 1000
	estimatedValueSize = 1024
)

// conditionSizes gives the cost estimator the sizes it cannot know: the
// checker asks only about values whose size it cannot compute (literals and
// comprehensions' results have theirs), which are objects and what comes
// from the objects' data.
type conditionSizes struct{}

func (conditionSizes) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	if path := element.Path(); len(path) == 1 && path[0] == "objects" {
		return &checker.SizeEstimate{Min: 0, Max: estimatedObjects}
	}
	return &checker.SizeEstimate{Min: 0, Max: estimatedValueSize}
}

func (conditionSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// CompileCondition compiles a wait step's condition, which must return a
// bool and whose estimated cost must be at most maxEstimatedConditionCost.
func CompileCondition(expr string) (cel.Program, error) {
	ast, issues := conditionEnv.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("condition %q does not compile: %w", expr, issues.Err())
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("condition %q returns %s, not a bool", expr, ast.OutputType())
	}
	// library.CostEstimator knows the Kubernetes functions' costs, as the
	// base environment's runtime cost tracking does.
	est, err := conditionEnv.EstimateCost(ast, &library.CostEstimator{SizeEstimator: conditionSizes{}})
	if err != nil {
		return nil, fmt.Errorf("condition %q: estimating its cost: %w", expr, err)
	}
	if est.Max > maxEstimatedConditionCost {
		return nil, fmt.Errorf("condition %q is too costly: its estimated cost is up to %s, over the limit of %d (for up to %d objects, with strings, lists and maps of up to %d in them)",
			expr, costString(est.Max), maxEstimatedConditionCost, estimatedObjects, estimatedValueSize)
	}
	// The base environment tracks cost with the Kubernetes functions' costs
	// and stops at PerCallLimit; the limit is set here again so that it is
	// this package's, whatever the library's default becomes.
	prg, err := conditionEnv.Program(ast, cel.CostLimit(maxConditionCost), cel.InterruptCheckFrequency(celconfig.CheckFrequency))
	if err != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, err)
	}
	return prg, nil
}

// costString shows an estimate; the largest ones are "unbounded".
func costString(c uint64) string {
	if c >= 1<<62 {
		return "unbounded"
	}
	return fmt.Sprint(c)
}
