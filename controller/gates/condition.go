package gates

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Limits of a condition: its length, and the cost of one evaluation (CEL's own cost units; a
// comparison of two fields costs a few). The conditions are the tenant's, evaluated in the
// controller: a runaway one must stop, not stall a sync.
const (
	MaxCondition  = 1024
	ConditionCost = 10000
)

// podsEnv declares what a pods gate's condition reads: canary and stable, each a PodsStats.
var podsEnv, podsEnvErr = cel.NewEnv(
	ext.NativeTypes(reflect.TypeFor[PodsStats](), ext.ParseStructTag("json")),
	cel.Variable("canary", cel.ObjectType("gates.PodsStats")),
	cel.Variable("stable", cel.ObjectType("gates.PodsStats")),
	cel.CrossTypeNumericComparisons(true),
)

// compile type-checks a condition (a misspelt field or a non-boolean result is refused here,
// not at the first measurement) and plans it with the cost limit.
func compile(expr string) (cel.Program, error) {
	if podsEnvErr != nil {
		return nil, podsEnvErr
	}
	if len(expr) > MaxCondition {
		return nil, fmt.Errorf("%d characters, at most %d allowed", len(expr), MaxCondition)
	}
	ast, issues := podsEnv.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, issues.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("is a %s, not a bool", ast.OutputType())
	}
	return podsEnv.Program(ast, cel.CostLimit(ConditionCost))
}

// holds evaluates a compiled condition over the measured stats.
func holds(p cel.Program, canary, stable PodsStats) (bool, error) {
	out, _, err := p.Eval(map[string]any{"canary": canary, "stable": stable})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, errors.New("did not give a bool")
	}
	return b, nil
}

// Judge gives the outcome of one measurement of the pods gate, what it measured as people read
// it, and why: the condition that held, or the error. A canary without pods is NoData: there
// is nothing to judge, which never fails a step.
func (d *Definition) Judge(canary, stable PodsStats) (outcome grayapi.GateOutcome, value, why string) {
	value = "canary: " + canary.String() + "; stable: " + stable.String()
	if canary.Pods == 0 {
		return grayapi.GateNoData, value, "the canary has no pods"
	}
	ok, err := holds(d.success, canary, stable)
	switch {
	case err != nil:
		return grayapi.GateError, value, fmt.Sprintf("success %q: %v", d.Success, err)
	case ok:
		return grayapi.GatePass, value, d.Success
	case d.failure == nil:
		return grayapi.GateFail, value, "not " + d.Success
	}
	failed, err := holds(d.failure, canary, stable)
	switch {
	case err != nil:
		return grayapi.GateError, value, fmt.Sprintf("failure %q: %v", d.Failure, err)
	case failed:
		return grayapi.GateFail, value, d.Failure
	}
	return grayapi.GateInconclusive, value, fmt.Sprintf("neither %s nor %s", d.Success, d.Failure)
}
