package gates

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// QueryVars are what a metric gate's query variables stand for in one measurement.
type QueryVars struct {
	Namespace, Deployment string
	// CanaryHash and StableHash are the revisions' pod-template-hash labels.
	CanaryHash, StableHash string
	// Window is how long the hold has been settled: what the measurement covers.
	Window time.Duration
}

// variable is one $name in a query.
var variable = regexp.MustCompile(`\$[a-z_]+`)

// values are the query variables for one run of the query; a compared gate's runs each set
// $hash and $pods to one revision's.
func (v QueryVars) values(compare bool, hash string) map[string]string {
	out := map[string]string{
		"$namespace":   v.Namespace,
		"$deployment":  v.Deployment,
		"$canary_hash": v.CanaryHash,
		"$stable_hash": v.StableHash,
		"$canary_pods": podNames(v.Deployment, v.CanaryHash),
		"$stable_pods": podNames(v.Deployment, v.StableHash),
		"$window":      strconv.FormatInt(max(int64(v.Window/time.Second), 1), 10) + "s",
	}
	if compare {
		out["$hash"], out["$pods"] = hash, podNames(v.Deployment, hash)
	}
	return out
}

// podNames is a regular expression matching the names of the pods of deployment's ReplicaSet
// of hash: the ReplicaSet's name and a dash, cut to 58 characters as the API server cuts a
// generateName, then five random characters. Dots are written [.]: no backslash has to survive
// PromQL's string quoting.
func podNames(deployment, hash string) string {
	prefix := deployment + "-" + hash + "-"
	if len(prefix) > 58 {
		prefix = prefix[:58]
	}
	return strings.ReplaceAll(prefix, ".", "[.]") + "[a-z0-9]{5}"
}

// substitute replaces the query's variables by values; an unknown one is an error naming the
// known ones.
func substitute(query string, values map[string]string) (string, error) {
	var unknown []string
	out := variable.ReplaceAllStringFunc(query, func(name string) string {
		v, ok := values[name]
		if !ok {
			unknown = append(unknown, name)
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variable %s: the variables are %s", unknown[0], strings.Join(slices.Sorted(maps.Keys(values)), " "))
	}
	return out, nil
}

// promQL parses with Prometheus' own parser and its default functions.
var promQL = parser.NewParser(parser.Options{})

// placeholders stand for a Deployment when a query is checked at load.
var placeholders = QueryVars{Namespace: "namespace", Deployment: "deployment", CanaryHash: "canary", StableHash: "stable", Window: time.Minute}

// checkQuery parses query as it will run, with placeholders for the variables.
func checkQuery(query string, compare bool) error {
	_, err := render(query, placeholders.values(compare, "canary"), "")
	return err
}

// Render is the query of d for one run (hash: the revision a compared gate's run is for),
// scoped to the Deployment's namespace: every series selector gets scopeLabel="<namespace>",
// as prom-label-proxy does, so that a tenant's query reads only its own namespace's series. A
// selector that names scopeLabel itself is refused.
func (d *Definition) Render(v QueryVars, hash, scopeLabel string) (string, error) {
	return render(d.Query, v.values(d.Compare, hash), scopeLabel)
}

// CheckScope refuses, at load, a query that selects on scopeLabel (a provider's namespace
// label): gray-controller sets it.
func (d *Definition) CheckScope(scopeLabel string) error {
	_, err := render(d.Query, placeholders.values(d.Compare, "canary"), scopeLabel)
	return err
}

func render(query string, values map[string]string, scopeLabel string) (string, error) {
	text, err := substitute(query, values)
	if err != nil {
		return "", err
	}
	expr, err := promQL.ParseExpr(text)
	if err != nil {
		return "", err
	}
	if scopeLabel == "" {
		return expr.String(), nil
	}
	scope, err := labels.NewMatcher(labels.MatchEqual, scopeLabel, values["$namespace"])
	if err != nil {
		return "", err
	}
	var refused error
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		sel, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range sel.LabelMatchers {
			if m.Name == scopeLabel && refused == nil {
				refused = fmt.Errorf("selector %s names the label %s: leave it out, gray-controller adds it to every selector, set to the Deployment's namespace",
					sel, scopeLabel)
			}
		}
		sel.LabelMatchers = append(sel.LabelMatchers, scope)
		return nil
	})
	if refused != nil {
		return "", refused
	}
	return expr.String(), nil
}

// Reading is what one run of a query returned.
type Reading struct {
	// Values holds one value per series returned (a scalar is one).
	Values []float64
	// Err: the query could not be run (the provider's answer, a timeout, an evaluation error).
	Err error
}

// JudgeMetric gives the outcome of one measurement of a metric gate from its readings (one, or
// canary's then stable's for a compared gate), what they were as people read them, and why. A
// query that returned nothing, NaN or an infinity is NoData, never a Fail: a canary without
// traffic yet is not a failing canary.
func (d *Definition) JudgeMetric(readings ...Reading) (outcome grayapi.GateOutcome, value, why string) {
	names := []string{"result"}
	if d.Compare {
		names = []string{"canary", "stable"}
	}
	if len(readings) != len(names) {
		return grayapi.GateError, "", fmt.Sprintf("%d readings for %d runs of the query", len(readings), len(names))
	}
	vars := map[string]any{}
	var shown []string
	for i, r := range readings {
		name := names[i]
		switch {
		case r.Err != nil:
			return grayapi.GateError, strings.Join(shown, ", "), fmt.Sprintf("query (%s): %v", name, r.Err)
		case len(r.Values) == 0:
			return grayapi.GateNoData, strings.Join(shown, ", "), fmt.Sprintf("the query (%s) returned no series", name)
		case len(r.Values) > 1:
			return grayapi.GateError, strings.Join(shown, ", "),
				fmt.Sprintf("the query (%s) returned %d series: aggregate it to one (sum, max, ...)", name, len(r.Values))
		case math.IsNaN(r.Values[0]) || math.IsInf(r.Values[0], 0):
			shown = append(shown, fmt.Sprintf("%s %v", name, r.Values[0]))
			return grayapi.GateNoData, strings.Join(shown, ", "), fmt.Sprintf("the query (%s) returned %v", name, r.Values[0])
		}
		vars[name] = r.Values[0]
		shown = append(shown, name+" "+strconv.FormatFloat(r.Values[0], 'g', 6, 64))
	}
	outcome, why = d.judge(vars)
	return outcome, strings.Join(shown, ", "), why
}

// Measurement is one metric gate's measurement, taken off the sync path for one hold's
// measurement due at Due, until a sync records it.
type Measurement struct {
	Revision int64
	Step     int32
	Due, At  time.Time
	Outcome  grayapi.GateOutcome
	Value    string
	Why      string
}

// Answers reports whether m is the measurement due at due of the hold at revision, step.
func (m Measurement) Answers(revision int64, step int32, due time.Time) bool {
	return m.Revision == revision && m.Step == step && m.Due.Equal(due)
}
