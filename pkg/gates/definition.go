package gates

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Definition is one gate: where its measurements come from, the conditions that judge them,
// and how many outcomes of each kind a hold takes.
type Definition struct {
	Name string
	// Source says where it was defined, for messages: `ConfigMap "ns/name", key "pods"` or
	// "built in".
	Source string
	// Provider names where measurements come from: pods (built in) or a provider gray-controller
	// was given (Provider); Kind is what the gate measures, read from the fields it has.
	Provider string
	Kind     Kind
	// Query is a metric gate's PromQL, with variables ($canary_pods, ...); Compare runs it once
	// for each revision ($hash, $pods) and judges canary against stable.
	Query   string
	Compare bool
	// Success and Failure are CEL expressions; Failure may be empty (then a Success that is
	// false is a Fail).
	Success, Failure string
	Interval         time.Duration
	// Count is how many passes leave the hold; more Fails than FailureLimit fail the step; more
	// Inconclusive, NoData or Error outcomes than InconclusiveLimit make the hold say so.
	Count, FailureLimit, InconclusiveLimit int32

	success, failure cel.Program
	// queries are a metric gate's query compiled for each scope label asked (Definition.compiled).
	queriesMu sync.Mutex
	queries   map[string]compiledOrRefused
}

// Kind is what a gate measures.
type Kind string

const (
	// KindPods counts the revisions' pods from the controller's cache.
	KindPods Kind = "pods"
	// KindMetric queries a Prometheus provider.
	KindMetric Kind = "metric"
	// KindWebhook asks a webhook provider.
	KindWebhook Kind = "webhook"
)

// The defaults and bounds of a definition's fields (docs/gates.md).
const (
	DefaultInterval          = 30 * time.Second
	DefaultCount             = 3
	DefaultInconclusiveLimit = 3
	MinInterval              = time.Second
	MaxInterval              = 24 * time.Hour
	MaxCount                 = 100
	// MaxDefinition bounds a definition's YAML.
	MaxDefinition = 4096
)

// spec is a definition as written. Unknown fields are refused (sigs.k8s.io/yaml strict), so
// that a URL, a header or a misspelt field never passes unnoticed.
type spec struct {
	Provider          string `json:"provider"`
	Query             string `json:"query,omitempty"`
	Compare           bool   `json:"compare,omitempty"`
	Success           string `json:"success"`
	Failure           string `json:"failure,omitempty"`
	Interval          string `json:"interval,omitempty"`
	Count             *int32 `json:"count,omitempty"`
	FailureLimit      *int32 `json:"failureLimit,omitempty"`
	InconclusiveLimit *int32 `json:"inconclusiveLimit,omitempty"`
}

// Parse reads gate name's definition from text, found at source. The error names the gate, the
// source and the bad field.
func Parse(name, source, text string) (*Definition, error) {
	fail := func(format string, args ...any) (*Definition, error) {
		return nil, fmt.Errorf("gate %q (%s): %s", name, source, fmt.Sprintf(format, args...))
	}
	if len(text) > MaxDefinition {
		return fail("the definition is %d bytes, at most %d allowed", len(text), MaxDefinition)
	}
	// A definition is the tenant's; what gray-controller calls, and with which credentials, is the
	// admin's provider. Refused anywhere, a URL cannot hide in a query's string either.
	if strings.Contains(text, "://") {
		return fail("it contains a URL (\"://\"): a gate names a provider, and the providers' URLs are gray-controller's (docs/gates.md)")
	}
	var s spec
	if err := yaml.UnmarshalStrict([]byte(text), &s); err != nil {
		return fail("%v", err)
	}
	d := &Definition{Name: name, Source: source, Provider: s.Provider, Query: s.Query, Compare: s.Compare, Success: s.Success, Failure: s.Failure,
		Interval: DefaultInterval, Count: DefaultCount, InconclusiveLimit: DefaultInconclusiveLimit}
	env := podsEnv
	switch {
	case s.Provider == grayapi.PodsGate:
		d.Kind = KindPods
		if s.Query != "" || s.Compare {
			return fail("provider pods takes no query and no compare: it counts the revisions' pods")
		}
	case len(validation.IsDNS1123Label(s.Provider)) > 0:
		return fail("provider %q is not a provider's name: %q or one gray-controller was given (a DNS label)", s.Provider, grayapi.PodsGate)
	case s.Query == "":
		d.Kind, env = KindWebhook, webhookEnv
		if s.Compare {
			return fail("compare needs a query: a webhook is asked once")
		}
	default:
		d.Kind, env = KindMetric, metricEnv
		if s.Compare {
			env = compareEnv
		}
		if err := d.CheckScope(""); err != nil {
			return fail("query %q: %v", s.Query, err)
		}
	}
	if s.Interval != "" {
		interval, err := time.ParseDuration(s.Interval)
		if err != nil || interval < MinInterval || interval > MaxInterval {
			return fail("interval %q must be a Go duration from %s to %s", s.Interval, MinInterval, MaxInterval)
		}
		d.Interval = interval
	}
	for _, n := range []struct {
		field string
		value *int32
		min   int32
		into  *int32
	}{{"count", s.Count, 1, &d.Count}, {"failureLimit", s.FailureLimit, 0, &d.FailureLimit}, {"inconclusiveLimit", s.InconclusiveLimit, 0, &d.InconclusiveLimit}} {
		if n.value == nil {
			continue
		}
		if *n.value < n.min || *n.value > MaxCount {
			return fail("%s %d must be from %d to %d", n.field, *n.value, n.min, MaxCount)
		}
		*n.into = *n.value
	}
	var err error
	if s.Success == "" && d.Kind == KindWebhook && s.Failure == "" {
		// A webhook's 2xx passes and its 4xx fails without a condition.
		return d, nil
	}
	if s.Success == "" {
		return fail("success is empty: a condition over %s, e.g. %q", env.reads, env.example)
	}
	if d.success, err = env.compile(s.Success); err != nil {
		return fail("success %q: %v", s.Success, err)
	}
	if s.Failure != "" {
		if d.failure, err = env.compile(s.Failure); err != nil {
			return fail("failure %q: %v", s.Failure, err)
		}
	}
	return d, nil
}

// builtinPodsSuccess is the built-in pods gate's condition: no OOMKill, no crash loop, and no
// more restarts per pod than the stable revision's pods had over the same window.
const builtinPodsSuccess = "canary.oomKills == 0 && canary.crashLooping == 0 && canary.restartsPerPod <= stable.restartsPerPod"

// BuiltinPods is the pods gate as it stands when no ConfigMap defines one. It is shared: a
// Definition is never modified once parsed.
func BuiltinPods() *Definition { return builtinPods }

var builtinPods = func() *Definition {
	d, err := Parse(grayapi.PodsGate, "built in", "provider: pods\nsuccess: "+builtinPodsSuccess+"\n")
	if err != nil {
		// A constant of this package, checked by TestBuiltinPods: never user data.
		panic(fmt.Sprintf("the built-in pods gate does not compile: %v", err))
	}
	return d
}()
