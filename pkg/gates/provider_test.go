package gates

import (
	"strings"
	"testing"
	"time"
)

func TestParseProvider(t *testing.T) {
	p, err := ParseProvider("prometheus", "test", "type: prometheus\nurl: https://prometheus.monitoring:9090/prom\ntimeout: 3s\nnamespaceLabel: kubernetes_namespace\nconcurrency: 2\n"+
		"bearerTokenSecret: prom-token\ntls:\n  caSecret: prom-ca\nminInterval: 2s\n")
	if err != nil {
		t.Fatal(err)
	}
	if p.URL.String() != "https://prometheus.monitoring:9090/prom" || p.Timeout != 3*time.Second || p.NamespaceLabel != "kubernetes_namespace" || p.Concurrency != 2 ||
		p.BearerTokenSecret != "prom-token" || p.CASecret != "prom-ca" || p.InsecureSkipVerify || p.MinInterval != 2*time.Second {
		t.Errorf("parsed %+v", *p)
	}
	d, err := PrometheusURLProvider("http://127.0.0.1:9090")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "prometheus" || d.Timeout != 10*time.Second || d.NamespaceLabel != "namespace" || d.Concurrency != 4 || d.MinInterval != 10*time.Second {
		t.Errorf("--prometheus-url gave %+v, want prometheus with timeout 10s, label namespace, concurrency 4, minInterval 10s", *d)
	}
}

func TestParseProviderRefuses(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"type", "type: graphite\nurl: http://g\n", `type "graphite" is not known`},
		{"webhook for nobody", "type: webhook\nurl: http://smoke/check\n", "allowedNamespaces is empty"},
		{"webhook namespace", "type: webhook\nurl: http://smoke/check\nallowedNamespaces: [Shop]\n", `allowedNamespaces: "Shop" is not a namespace`},
		{"webhook label", "type: webhook\nurl: http://smoke/check\nallowedNamespaces: [shop]\nnamespaceLabel: ns\n", "namespaceLabel is a Prometheus provider's"},
		{"secret name", "type: prometheus\nurl: https://p\nbearerTokenSecret: Token_1\n", `bearerTokenSecret "Token_1" is not a Secret's name`},
		{"ca and insecure", "type: prometheus\nurl: https://p\ntls: {caSecret: ca, insecureSkipVerify: true}\n", "tls.caSecret and tls.insecureSkipVerify contradict"},
		{"prometheus allow-list", "type: prometheus\nurl: http://p\nallowedNamespaces: [shop]\n", "allowedNamespaces and signingSecret are a webhook's"},
		{"relative url", "type: prometheus\nurl: prometheus:9090\n", "must be an absolute http or https URL"},
		{"credentials", "type: prometheus\nurl: http://admin:secret@prometheus:9090\n", `url "http://admin:xxxxx@prometheus:9090" carries credentials`},
		{"query in url", "type: prometheus\nurl: http://p:9090/?x=1\n", "must not have a query"},
		{"timeout", "type: prometheus\nurl: http://p\ntimeout: 5m\n", `timeout "5m" must be a Go duration above 0 and at most 1m0s`},
		{"label", "type: prometheus\nurl: http://p\nnamespaceLabel: name-space\n", `namespaceLabel "name-space" is not a Prometheus label name`},
		{"concurrency", "type: prometheus\nurl: http://p\nconcurrency: 0\n", "concurrency 0 must be from 1 to 64"},
		{"minInterval", "type: prometheus\nurl: http://p\nminInterval: 500ms\n", `minInterval "500ms" must be a Go duration from 1s to 24h0m0s`},
		{"unknown field", "type: prometheus\nurl: http://p\nheaders: {a: b}\n", `unknown field "headers"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProvider("prom", "ConfigMap gray-system/providers", tc.text)
			if err == nil || !strings.HasPrefix(err.Error(), `provider "prom" (ConfigMap gray-system/providers): `) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming the provider, its source and %q", err, tc.want)
			}
		})
	}
}

func TestWebhookProviderAllows(t *testing.T) {
	p, err := ParseProvider("smoke", "test", "type: webhook\nurl: https://smoke.ci/check\nallowedNamespaces: [shop, web]\nsigningSecret: smoke-key\n")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Allows("shop") || !p.Allows("web") || p.Allows("bank") || p.SigningSecret != "smoke-key" {
		t.Errorf("provider %+v allows shop %v, web %v, bank %v; want true, true, false", *p, p.Allows("shop"), p.Allows("web"), p.Allows("bank"))
	}
	every, err := ParseProvider("smoke", "test", "type: webhook\nurl: https://smoke.ci/check\nallowedNamespaces: ['*']\n")
	if err != nil || !every.Allows("bank") {
		t.Errorf("allowedNamespaces [*] does not allow bank: %v", err)
	}
}
