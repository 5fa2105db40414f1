/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package policy

import (
	"fmt"

	"github.com/google/cel-go/cel"
)

// conditionEnv declares what a wait step's condition can see: objects, the
// list of every object its resources select, each as a map like the API's
// JSON.
var conditionEnv = func() *cel.Env {
	env, err := cel.NewEnv(cel.Variable("objects", cel.ListType(cel.DynType)))
	if err != nil {
		panic(err)
	}
	return env
}()

// maxConditionCost bounds one evaluation, as the API server bounds its own
// CEL rules.
const maxConditionCost = 1_000_000

// CompileCondition compiles a wait step's condition, which must return a
// bool.
func CompileCondition(expr string) (cel.Program, error) {
	ast, issues := conditionEnv.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, fmt.Errorf("condition %q does not compile: %w", expr, issues.Err())
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("condition %q returns %s, not a bool", expr, ast.OutputType())
	}
	prg, err := conditionEnv.Program(ast, cel.CostLimit(maxConditionCost), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("condition %q: %w", expr, err)
	}
	return prg, nil
}
