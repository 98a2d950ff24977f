package gates

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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

// conditionEnv is what one kind of condition reads, and how people are told so.
type conditionEnv struct {
	env            *cel.Env
	err            error
	reads, example string
}

func newConditionEnv(reads, example string, opts ...cel.EnvOption) conditionEnv {
	env, err := cel.NewEnv(append(opts, cel.CrossTypeNumericComparisons(true))...)
	return conditionEnv{env: env, err: err, reads: reads, example: example}
}

var (
	// podsEnv: a pods gate's condition reads canary and stable, each a PodsStats.
	podsEnv = newConditionEnv("canary and stable", builtinPodsSuccess,
		ext.NativeTypes(reflect.TypeFor[PodsStats](), ext.ParseStructTag("json")),
		cel.Variable("canary", cel.ObjectType("gates.PodsStats")),
		cel.Variable("stable", cel.ObjectType("gates.PodsStats")))
	// metricEnv: a metric gate's condition reads the query's one value.
	metricEnv = newConditionEnv("result", "result < 0.01", cel.Variable("result", cel.DoubleType))
	// webhookEnv: a webhook gate's condition reads the JSON body of a 2xx answer.
	webhookEnv = newConditionEnv("result (the answer's JSON body)", "result.errors == 0", cel.Variable("result", cel.DynType))
	// compareEnv: a compared metric gate's reads the value for each revision.
	compareEnv = newConditionEnv("canary and stable", "canary <= stable * 1.2",
		cel.Variable("canary", cel.DoubleType), cel.Variable("stable", cel.DoubleType))
)

// compile type-checks a condition (a misspelt field or a non-boolean result is refused here,
// not at the first measurement) and plans it with the cost limit.
func (e conditionEnv) compile(expr string) (cel.Program, error) {
	if e.err != nil {
		return nil, e.err
	}
	if len(expr) > MaxCondition {
		return nil, fmt.Errorf("%d characters, at most %d allowed", len(expr), MaxCondition)
	}
	ast, issues := e.env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		if msg := issues.Err().Error(); strings.Contains(msg, "(double, int)") || strings.Contains(msg, "(int, double)") {
			return nil, fmt.Errorf("%s (CEL does not mix a double and an int in arithmetic: write 2.0, not 2)", msg)
		}
		return nil, issues.Err()
	}
	if ast.OutputType() != cel.BoolType {
		return nil, fmt.Errorf("is a %s, not a bool", ast.OutputType())
	}
	return e.env.Program(ast, cel.CostLimit(ConditionCost), cel.CostTracking(sizeCharged{}))
}

// sizeCharged charges an addition by the size of what it built, whatever overload ran. CEL
// charges a string's concatenation by its size only when it knew the overload when it compiled;
// over a webhook's untyped answer it picks the overload at run time and charges 1, so a condition
// of a thousand characters could build hundreds of MiB under the cost limit.
type sizeCharged struct{}

func (sizeCharged) CallCost(function, _ string, _ []ref.Val, result ref.Val) *uint64 {
	sized, ok := result.(traits.Sizer)
	if function != operators.Add || !ok {
		return nil
	}
	size, _ := sized.Size().(types.Int)
	cost := 1 + uint64(math.Ceil(float64(size)*common.StringTraversalCostFactor))
	return &cost
}

// holds evaluates a compiled condition over what was measured.
func holds(p cel.Program, vars map[string]any) (bool, error) {
	out, _, err := p.Eval(vars)
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
	outcome, why = d.judge(map[string]any{"canary": canary, "stable": stable})
	return outcome, value, why
}

// judge evaluates the conditions over vars: Pass when success holds, else Fail when failure
// holds (or there is none), else Inconclusive; an evaluation error is Error.
func (d *Definition) judge(vars map[string]any) (grayapi.GateOutcome, string) {
	ok, err := holds(d.success, vars)
	switch {
	case err != nil:
		return grayapi.GateError, fmt.Sprintf("success %q: %v", d.Success, err)
	case ok:
		return grayapi.GatePass, d.Success
	case d.failure == nil:
		return grayapi.GateFail, "not " + d.Success
	}
	failed, err := holds(d.failure, vars)
	switch {
	case err != nil:
		return grayapi.GateError, fmt.Sprintf("failure %q: %v", d.Failure, err)
	case failed:
		return grayapi.GateFail, d.Failure
	}
	return grayapi.GateInconclusive, fmt.Sprintf("neither %s nor %s", d.Success, d.Failure)
}
