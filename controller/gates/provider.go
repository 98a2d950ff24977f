package gates

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Provider is where metric gates' measurements come from: the cluster admin's, read from
// gray-controller's own namespace (or --prometheus-url), never from a tenant's definition.
type Provider struct {
	Name string
	// Source says where it was defined, for messages.
	Source string
	// Type is "prometheus".
	Type string
	// URL is the Prometheus HTTP API's base (…/api/v1/query is added).
	URL *url.URL
	// Timeout bounds one query.
	Timeout time.Duration
	// NamespaceLabel is the label every selector of a tenant's query is scoped by.
	NamespaceLabel string
	// Concurrency bounds the queries in flight to this provider.
	Concurrency int
}

// The defaults and bounds of a provider's fields (docs/gates.md).
const (
	ProviderPrometheus    = "prometheus"
	DefaultTimeout        = 10 * time.Second
	MaxTimeout            = time.Minute
	DefaultNamespaceLabel = "namespace"
	DefaultConcurrency    = 4
	MaxConcurrency        = 64
)

// providerSpec is a provider as written; unknown fields are refused.
type providerSpec struct {
	Type           string `json:"type"`
	URL            string `json:"url"`
	Timeout        string `json:"timeout,omitempty"`
	NamespaceLabel string `json:"namespaceLabel,omitempty"`
	Concurrency    *int   `json:"concurrency,omitempty"`
}

// ParseProvider reads provider name's definition from text, found at source. The error names
// the provider, the source and the bad field.
func ParseProvider(name, source, text string) (*Provider, error) {
	fail := func(format string, args ...any) (*Provider, error) {
		return nil, fmt.Errorf("provider %q (%s): %s", name, source, fmt.Sprintf(format, args...))
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fail("the name is not a DNS label: %s", msgs[0])
	}
	var s providerSpec
	if err := yaml.UnmarshalStrict([]byte(text), &s); err != nil {
		return fail("%v", err)
	}
	if s.Type != ProviderPrometheus {
		return fail("type %q is not known: the types are %q", s.Type, ProviderPrometheus)
	}
	u, err := url.Parse(s.URL)
	switch {
	case err != nil:
		return fail("url %q: %v", s.URL, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fail("url %q must be an absolute http or https URL", s.URL)
	case u.User != nil:
		return fail("url %q carries credentials: they would show in logs and errors", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return fail("url %q must not have a query or a fragment", s.URL)
	}
	p := &Provider{Name: name, Source: source, Type: s.Type, URL: u, Timeout: DefaultTimeout, NamespaceLabel: DefaultNamespaceLabel,
		Concurrency: DefaultConcurrency}
	if s.Timeout != "" {
		timeout, err := time.ParseDuration(s.Timeout)
		if err != nil || timeout <= 0 || timeout > MaxTimeout {
			return fail("timeout %q must be a Go duration above 0 and at most %s", s.Timeout, MaxTimeout)
		}
		p.Timeout = timeout
	}
	if s.NamespaceLabel != "" {
		if !validLabelName(s.NamespaceLabel) {
			return fail("namespaceLabel %q is not a Prometheus label name", s.NamespaceLabel)
		}
		p.NamespaceLabel = s.NamespaceLabel
	}
	if s.Concurrency != nil {
		if *s.Concurrency < 1 || *s.Concurrency > MaxConcurrency {
			return fail("concurrency %d must be from 1 to %d", *s.Concurrency, MaxConcurrency)
		}
		p.Concurrency = *s.Concurrency
	}
	return p, nil
}

// PrometheusURLProvider is the provider --prometheus-url stands for: named prometheus, with the
// defaults.
func PrometheusURLProvider(rawURL string) (*Provider, error) {
	return ParseProvider(ProviderPrometheus, "--prometheus-url", "type: prometheus\nurl: "+strconv.Quote(rawURL)+"\n")
}

// validLabelName is Prometheus' classic label name: [a-zA-Z_][a-zA-Z0-9_]*.
func validLabelName(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}
