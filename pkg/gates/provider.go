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
	// MinInterval is the shortest interval a gate measured by this provider may ask for: its
	// slots are shared by every namespace, and one namespace measuring often would keep the
	// others waiting.
	MinInterval time.Duration
	// AllowedNamespaces are the namespaces whose gates may call a webhook ("*": every one).
	AllowedNamespaces []string
	// SigningSecret names the Secret, in gray-controller's namespace, whose key "key" signs a
	// webhook's calls (empty: unsigned).
	SigningSecret string
	// BearerTokenSecret names the Secret whose key "token" is sent as a bearer token; CASecret
	// the one whose key "ca.crt" holds the CAs a https URL's certificate must chain to (empty:
	// the system's); InsecureSkipVerify checks no certificate at all. Both Secrets live in
	// gray-controller's namespace.
	BearerTokenSecret  string
	CASecret           string
	InsecureSkipVerify bool
}

// providerTLS is a provider's tls field as written.
type providerTLS struct {
	CASecret           string `json:"caSecret,omitempty"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify,omitempty"`
}

// Allows reports whether a gate of namespace may use p: always for Prometheus, whose queries are
// scoped to the namespace; for a webhook, when its allow-list names it.
func (p *Provider) Allows(namespace string) bool {
	if p.Type != ProviderWebhook {
		return true
	}
	for _, ns := range p.AllowedNamespaces {
		if ns == "*" || ns == namespace {
			return true
		}
	}
	return false
}

// The defaults and bounds of a provider's fields (docs/gates.md).
const (
	ProviderPrometheus = "prometheus"
	ProviderWebhook    = "webhook"
	// SigningKey, TokenKey and CAKey are the keys of the Secrets' data a provider names.
	SigningKey            = "key"
	TokenKey              = "token"
	CAKey                 = "ca.crt"
	DefaultTimeout        = 10 * time.Second
	MaxTimeout            = time.Minute
	DefaultNamespaceLabel = "namespace"
	DefaultConcurrency    = 4
	MaxConcurrency        = 64
	DefaultMinInterval    = 10 * time.Second
)

// providerSpec is a provider as written; unknown fields are refused.
type providerSpec struct {
	Type           string `json:"type"`
	URL            string `json:"url"`
	Timeout        string `json:"timeout,omitempty"`
	NamespaceLabel string `json:"namespaceLabel,omitempty"`
	Concurrency    *int   `json:"concurrency,omitempty"`
	MinInterval    string `json:"minInterval,omitempty"`
	// Secrets in gray-controller's namespace.
	BearerTokenSecret string       `json:"bearerTokenSecret,omitempty"`
	TLS               *providerTLS `json:"tls,omitempty"`
	// Webhooks only.
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	SigningSecret     string   `json:"signingSecret,omitempty"`
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
	switch s.Type {
	case ProviderPrometheus:
		if len(s.AllowedNamespaces) > 0 || s.SigningSecret != "" {
			return fail("allowedNamespaces and signingSecret are a webhook's: a Prometheus query is scoped to its gate's namespace")
		}
	case ProviderWebhook:
		if len(s.AllowedNamespaces) == 0 {
			return fail(`allowedNamespaces is empty: name the namespaces whose gates may call it ("*" for every one)`)
		}
		for _, ns := range s.AllowedNamespaces {
			if msgs := validation.IsDNS1123Label(ns); ns != "*" && len(msgs) > 0 {
				return fail("allowedNamespaces: %q is not a namespace: %s", ns, msgs[0])
			}
		}
		if s.NamespaceLabel != "" {
			return fail("namespaceLabel is a Prometheus provider's")
		}
	default:
		return fail("type %q is not known: the types are %q and %q", s.Type, ProviderPrometheus, ProviderWebhook)
	}
	var tls providerTLS
	if s.TLS != nil {
		tls = *s.TLS
	}
	for _, secret := range []struct{ field, name string }{{"signingSecret", s.SigningSecret}, {"bearerTokenSecret", s.BearerTokenSecret}, {"tls.caSecret", tls.CASecret}} {
		if msgs := validation.IsDNS1123Subdomain(secret.name); secret.name != "" && len(msgs) > 0 {
			return fail("%s %q is not a Secret's name: %s", secret.field, secret.name, msgs[0])
		}
	}
	if tls.CASecret != "" && tls.InsecureSkipVerify {
		return fail("tls.caSecret and tls.insecureSkipVerify contradict each other: a CA is checked, or nothing is")
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
		Concurrency: DefaultConcurrency, MinInterval: DefaultMinInterval, AllowedNamespaces: s.AllowedNamespaces, SigningSecret: s.SigningSecret,
		BearerTokenSecret: s.BearerTokenSecret, CASecret: tls.CASecret, InsecureSkipVerify: tls.InsecureSkipVerify}
	if p.Type == ProviderWebhook {
		p.NamespaceLabel = ""
	}
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
	if s.MinInterval != "" {
		minInterval, err := time.ParseDuration(s.MinInterval)
		if err != nil || minInterval < MinInterval || minInterval > MaxInterval {
			return fail("minInterval %q must be a Go duration from %s to %s", s.MinInterval, MinInterval, MaxInterval)
		}
		p.MinInterval = minInterval
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

// CheckProvider reports whether d can be measured by p: p of the type d's fields ask for (a query
// needs Prometheus, no query a webhook), d's interval no shorter than p's minInterval, and d's
// query not selecting p's namespace label.
func (d *Definition) CheckProvider(p *Provider) error {
	switch {
	case d.Kind == KindMetric && p.Type != ProviderPrometheus:
		return fmt.Errorf("provider %q is a %s, and a gate with a query needs a %s", p.Name, p.Type, ProviderPrometheus)
	case d.Kind == KindWebhook && p.Type != ProviderWebhook:
		return fmt.Errorf("provider %q is a %s: the gate needs a query", p.Name, p.Type)
	case d.Interval < p.MinInterval:
		return fmt.Errorf("interval %s is shorter than provider %q's minInterval %s: measure less often, or the admin lowers minInterval", d.Interval, p.Name, p.MinInterval)
	case d.Kind == KindMetric:
		if err := d.CheckScope(p.NamespaceLabel); err != nil {
			return fmt.Errorf("query %q: %w", d.Query, err)
		}
	}
	return nil
}
