package gates

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

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
		"$window":      strconv.FormatInt(int64(v.window()/time.Second), 10) + "s",
	}
	if compare {
		out["$hash"], out["$pods"] = hash, podNames(v.Deployment, hash)
	}
	return out
}

// window is what $window stands for, in a string or as a duration: Window in whole seconds, at
// least one.
func (v QueryVars) window() time.Duration {
	return max(v.Window.Truncate(time.Second), time.Second)
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

// promQL parses with Prometheus' own parser and its default functions.
var promQL = parser.NewParser(parser.Options{})

// knownVariables are the variables a query of a gate compared or not may use.
func knownVariables(compare bool) map[string]bool {
	known := map[string]bool{}
	for name := range (QueryVars{}).values(compare, "") {
		known[name] = true
	}
	return known
}

// Render is the query of d for one run (hash: the revision a compared gate's run is for),
// scoped to the Deployment's namespace: every series selector gets scopeLabel="<namespace>",
// as prom-label-proxy does, so that a tenant's query reads only its own namespace's series. A
// selector that names scopeLabel itself is refused. The query is parsed once per scope label
// (compileQuery); a run writes its values into the parsed tree. A run for a revision that does
// not exist is ErrNoRevision.
func (d *Definition) Render(v QueryVars, hash, scopeLabel string) (string, error) {
	q, err := d.compiled(scopeLabel)
	if err != nil {
		return "", err
	}
	return q.render(v.values(d.Compare, hash), v.window())
}

// CheckScope refuses, at load, a query that selects on scopeLabel (a provider's namespace
// label): gray-controller sets it.
func (d *Definition) CheckScope(scopeLabel string) error {
	_, err := d.compiled(scopeLabel)
	return err
}

// compiled is d's query compiled for scopeLabel, compiled on first use and kept with d: the
// gates of a Deployment are resolved on every one of its syncs, and a definition serves every
// Deployment that names it. Scope labels are the admin's providers', so the map stays small.
func (d *Definition) compiled(scopeLabel string) (*compiledQuery, error) {
	d.queriesMu.Lock()
	defer d.queriesMu.Unlock()
	c, ok := d.queries[scopeLabel]
	if !ok {
		c.query, c.err = compileQuery(d.Query, knownVariables(d.Compare), scopeLabel)
		if d.queries == nil {
			d.queries = map[string]compiledOrRefused{}
		}
		d.queries[scopeLabel] = c
	}
	return c.query, c.err
}

// compiledOrRefused is the outcome of compiling a query for one scope label.
type compiledOrRefused struct {
	query *compiledQuery
	err   error
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
// query that returned nothing, NaN or an infinity, or a run for a revision that does not exist
// (ErrNoRevision), is NoData, never a Fail: a canary without traffic yet is not a failing canary.
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
		case errors.Is(r.Err, ErrNoRevision):
			return grayapi.GateNoData, strings.Join(shown, ", "), fmt.Sprintf("query (%s): %v", name, r.Err)
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
