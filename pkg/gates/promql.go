package gates

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Bounds of a metric gate's query, checked when its definition is loaded (docs/gates.md): the
// query is a tenant's, parsed and printed by the controller, so its size, how deeply it nests and
// how many nodes it has are bounded before and after it is parsed. The recipes of docs/gates.md
// nest 5 deep and have at most 9 nodes.
const (
	MaxQuery      = 2048
	MaxQueryDepth = 16
	MaxQueryNodes = 128
)

// ErrNoRevision is a query run for a revision that does not exist (no stable ReplicaSet yet): a
// hash matcher set to "" would match every series without the label, so the run is not made and
// the measurement is NoData.
var ErrNoRevision = errors.New("no such revision")

// windowStandIn takes $window's place outside strings while the query is parsed: a duration of
// the same length as "$window", so that the parser's positions stay the user's. A query whose own
// durations include it is refused (the count of stand-ins would not match).
const (
	windowStandIn      = "7777777"
	windowStandInValue = 7777777 * time.Second
)

// compiledQuery is a metric gate's query parsed once, scoped by one label, with the places its
// variables stand. A run writes the run's values into those places and prints the tree, under mu:
// the tree is shared by every Deployment the definition serves.
type compiledQuery struct {
	mu    sync.Mutex
	expr  parser.Expr
	slots []querySlot
	// uses are the variables the query reads, to refuse a run for a revision that does not exist.
	uses map[string]bool
}

// querySlot is one place of the tree a variable's value is written to: a string (a label value,
// a function's string argument) whose template holds variables, or a duration that is $window.
type querySlot struct {
	text     *string
	template string
	duration *time.Duration
}

// compileQuery parses query as a run will see it: variables inside strings stay as they are
// (each is a slot), $window outside them stands for a duration; every selector gets scopeLabel
// (when not empty) set to $namespace. known are the variables the definition may use.
func compileQuery(query string, known map[string]bool, scopeLabel string) (*compiledQuery, error) {
	if len(query) > MaxQuery {
		return nil, fmt.Errorf("%d bytes, at most %d allowed", len(query), MaxQuery)
	}
	text, scanned, err := scanQuery(query, known)
	if err != nil {
		return nil, err
	}
	expr, err := promQL.ParseExpr(text)
	if err != nil {
		return nil, err
	}
	q := &compiledQuery{expr: expr, uses: map[string]bool{}}
	nodes, depth := 0, 0
	inString, windows := 0, 0
	var refused error
	refuse := func(format string, args ...any) {
		if refused == nil {
			refused = fmt.Errorf(format, args...)
		}
	}
	addText := func(p *string) {
		names := variable.FindAllString(*p, -1)
		if len(names) == 0 {
			return
		}
		for _, name := range names {
			q.uses[name] = true
		}
		inString += len(names)
		q.slots = append(q.slots, querySlot{text: p, template: *p})
	}
	addDuration := func(p *time.Duration) {
		if *p == windowStandInValue {
			q.uses["$window"] = true
			windows++
			q.slots = append(q.slots, querySlot{duration: p})
		}
	}
	parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
		if node == nil {
			// Walk's call after a node's children.
			return nil
		}
		nodes++
		depth = max(depth, len(path)+1)
		switch n := node.(type) {
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				if variable.MatchString(m.Name) {
					refuse("label name %q: a variable stands in a label's value, not its name", m.Name)
				}
				if m.Name == scopeLabel && scopeLabel != "" {
					refuse("selector %s names the label %s: leave it out, gray-controller adds it to every selector, set to the Deployment's namespace",
						n, scopeLabel)
				}
				addText(&m.Value)
			}
			addDuration(&n.OriginalOffset)
			if scopeLabel != "" {
				scope := &labels.Matcher{Type: labels.MatchEqual, Name: scopeLabel, Value: "$namespace"}
				n.LabelMatchers = append(n.LabelMatchers, scope)
				q.slots = append(q.slots, querySlot{text: &scope.Value, template: scope.Value})
			}
		case *parser.StringLiteral:
			addText(&n.Val)
		case *parser.MatrixSelector:
			addDuration(&n.Range)
		case *parser.SubqueryExpr:
			addDuration(&n.Range)
			addDuration(&n.Step)
			addDuration(&n.OriginalOffset)
		}
		return nil
	})
	switch {
	case refused != nil:
		return nil, refused
	case depth > MaxQueryDepth:
		return nil, fmt.Errorf("nests %d deep, at most %d allowed", depth, MaxQueryDepth)
	case nodes > MaxQueryNodes:
		return nil, fmt.Errorf("has %d nodes, at most %d allowed", nodes, MaxQueryNodes)
	case windows != scanned.windows:
		return nil, fmt.Errorf("$window stands alone as a range, a subquery's range or step, or an offset ([$window], not [$window * 2]); a duration of %ss is reserved for it",
			windowStandIn)
	case inString != scanned.inStrings:
		return nil, errors.New("a variable stands in a label's value or a string argument, not in a label name or a grouping")
	}
	return q, nil
}

// variableAt is the variable that starts a text, if one does: the scan's '$' is that one's, not a
// later one's of the query.
var variableAt = regexp.MustCompile(`^` + variable.String())

// scannedQuery is what scanQuery found: how many times $window stands outside strings, and how
// many variables stand inside them.
type scannedQuery struct {
	windows, inStrings int
}

// scanQuery checks query's variables and brackets before the parser sees it: every variable is
// known, none but $window stands outside a string (it is replaced by windowStandIn there), and
// brackets nest at most MaxQueryDepth deep, which bounds the parser's work. PromQL's strings are
// "...", '...' (with backslash escapes) and `...`; a # outside them comments out the line.
func scanQuery(query string, known map[string]bool) (string, scannedQuery, error) {
	var out strings.Builder
	var found scannedQuery
	var quote byte
	depth := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' && i+1 < len(query) {
				out.WriteByte(c)
				i++
				c = query[i]
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '#':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			out.WriteString(query[i : i+end])
			i += end - 1
			continue
		case c == '(' || c == '[' || c == '{':
			if depth++; depth > MaxQueryDepth {
				return "", found, fmt.Errorf("brackets nest more than %d deep", MaxQueryDepth)
			}
		case c == ')' || c == ']' || c == '}':
			depth--
		}
		if c != '$' {
			out.WriteByte(c)
			continue
		}
		name := variableAt.FindString(query[i:])
		switch {
		case name == "":
			out.WriteByte(c)
			continue
		case !known[name]:
			return "", found, fmt.Errorf("unknown variable %s: the variables are %s", name, strings.Join(slices.Sorted(maps.Keys(known)), " "))
		case quote != 0:
			found.inStrings++
			out.WriteString(name)
		case name == "$window":
			found.windows++
			out.WriteString(windowStandIn)
		default:
			return "", found, fmt.Errorf("%s stands outside a string: write it inside quotes (pod=~%q); only $window stands alone, as a range", name, "$canary_pods")
		}
		i += len(name) - 1
	}
	return out.String(), found, nil
}

// render prints the query with values (each variable's, for one run) written in. A variable the
// query uses that names a revision without a hash makes the run ErrNoRevision.
func (q *compiledQuery) render(values map[string]string, window time.Duration) (string, error) {
	for name := range q.uses {
		if values[name] == "" && name != "$window" {
			return "", fmt.Errorf("%w: %s would be empty and match every series without the label", ErrNoRevision, name)
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, s := range q.slots {
		if s.duration != nil {
			*s.duration = window
			continue
		}
		*s.text = variable.ReplaceAllStringFunc(s.template, func(name string) string { return values[name] })
	}
	return q.expr.String(), nil
}
