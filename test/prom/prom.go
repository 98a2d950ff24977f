// Package prom runs a real Prometheus for the e2e suites: Debian's, unpacked by
// test/hack/install-prometheus.sh, listening on loopback only, scraping the targets a test names,
// and queried through its HTTP API as a dashboard, an alert or a gate would query it.
package prom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// ScrapeInterval is how often the test's Prometheus scrapes its targets: short, so that a
// test waits seconds for a value, not a minute.
const ScrapeInterval = time.Second

// Server is one running Prometheus.
type Server struct {
	URL  string // http://127.0.0.1:<port>
	proc *cluster.Process
	dir  string // its configuration and data, removed by Stop
}

// Start runs Prometheus scraping targets ("host:port", plain HTTP /metrics) as job "test", and
// stops it (by its pid) when the test ends.
func Start(t testing.TB, targets ...string) *Server {
	t.Helper()
	s, err := Run(targets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Config is what StartWith's Prometheus scrapes and evaluates.
type Config struct {
	// Targets are "host:port" endpoints serving /metrics, scraped as job "test".
	Targets []string
	// Labelled are more targets, each with the target labels service discovery would give it
	// (a Prometheus Operator's job, namespace, service and pod), in the same scrape job.
	Labelled []Target
	// HonorLabels keeps a scraped series' own labels where they clash with its target's, as a
	// ServiceMonitor with honorLabels does; otherwise the target's win and the series' move to
	// exported_<name>.
	HonorLabels bool
	// Rules is a rule file loaded (the spec of a PrometheusRule), evaluated every ScrapeInterval.
	Rules []byte
	// BearerToken, when set, scrapes the targets over HTTPS with it, as a ServiceMonitor with a
	// ServiceAccount's token does: the certificate unchecked (self-signed), or verified with CA
	// (PEM) for ServerName when CA is set.
	BearerToken string
	CA          []byte
	ServerName  string
}

// Target is one scrape target and its target labels.
type Target struct {
	Address string
	Labels  map[string]string
}

// scrapeConfig is the one scrape job of c, in Prometheus' configuration format.
func (c Config) scrapeConfig() map[string]any {
	var static []map[string]any
	if len(c.Targets) > 0 {
		static = append(static, map[string]any{"targets": c.Targets})
	}
	for _, t := range c.Labelled {
		static = append(static, map[string]any{"targets": []string{t.Address}, "labels": t.Labels})
	}
	job := map[string]any{"job_name": "test", "honor_labels": c.HonorLabels, "static_configs": static}
	if c.BearerToken != "" {
		job["scheme"] = "https"
		job["tls_config"] = map[string]any{"insecure_skip_verify": true}
		if c.CA != nil {
			job["tls_config"] = map[string]any{"ca_file": "ca.crt", "server_name": c.ServerName}
		}
		job["authorization"] = map[string]any{"credentials_file": "token"}
	}
	return job
}

// StartWith is Start for a Config.
func StartWith(t testing.TB, c Config) *Server {
	t.Helper()
	s, err := run(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// Run is Start for a program that is not a test (the benchmarks): its data goes to a new
// temporary folder, and the caller stops it with Stop, which removes that folder.
func Run(targets ...string) (*Server, error) {
	return run(Config{Targets: targets})
}

func run(c Config) (_ *Server, err error) {
	bin, err := binary("prometheus")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kubegray-prometheus-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	defer func() {
		if err != nil {
			_ = s.Stop()
		}
	}()
	config := map[string]any{
		"global":         map[string]any{"scrape_interval": ScrapeInterval.String(), "evaluation_interval": ScrapeInterval.String()},
		"scrape_configs": []any{c.scrapeConfig()},
	}
	if c.BearerToken != "" {
		if err := os.WriteFile(filepath.Join(dir, "token"), []byte(c.BearerToken), 0o600); err != nil {
			return nil, err
		}
	}
	if c.CA != nil {
		if err := os.WriteFile(filepath.Join(dir, "ca.crt"), c.CA, 0o600); err != nil {
			return nil, err
		}
	}
	if c.Rules != nil {
		if err := os.WriteFile(filepath.Join(dir, "rules.yml"), c.Rules, 0o600); err != nil {
			return nil, err
		}
		config["rule_files"] = []string{"rules.yml"}
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), data, 0o600); err != nil {
		return nil, err
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	if s.proc, err = cluster.StartProcess(dir, "prometheus", bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:"+strconv.Itoa(port)); err != nil {
		return nil, err
	}
	s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := s.waitReady(); err != nil {
		return nil, fmt.Errorf("prometheus did not become ready: %w\n%s", err, s.Tail())
	}
	return s, nil
}

// Stop stops Prometheus by its pid and removes its folder.
func (s *Server) Stop() error {
	var err error
	if s.proc != nil {
		err = s.proc.Stop(10 * time.Second)
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cluster.Poll(ctx, time.Minute, 200*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		if !s.proc.Alive() {
			return false, "", errors.New("prometheus exited")
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err != nil {
			return false, err.Error(), nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
}

// Tail is the end of Prometheus' log.
func (s *Server) Tail() string {
	return s.proc.Tail(40)
}

// Sample is one series of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query and returns its vector; any other result type, a query
// error or a warning is an error.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query?query="+url.QueryEscape(expr), &data); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %q, want vector", expr, data.ResultType)
	}
	var out []Sample
	for _, r := range data.Result {
		text, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", expr, r.Value[1], err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}

// get GETs path of the HTTP API and decodes the answer's data into data; an error answer or a
// warning is an error.
func (s *Server) get(ctx context.Context, path string, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		Error     string          `json:"error"`
		ErrorType string          `json:"errorType"`
		Warnings  []string        `json:"warnings"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: %w", resp.Status, err)
	}
	if body.Status != "success" || len(body.Warnings) > 0 {
		return fmt.Errorf("%s %s %v", body.ErrorType, body.Error, body.Warnings)
	}
	return json.Unmarshal(body.Data, data)
}

// binary is the path of name (prometheus or promtool): under $KUBEGRAY_PROMETHEUS when set,
// otherwise in the folder the install script prints after unpacking or reusing them.
func binary(name string) (string, error) {
	dir := os.Getenv("KUBEGRAY_PROMETHEUS")
	if dir == "" {
		var err error
		if dir, err = cluster.RunBuildScript("install-prometheus.sh"); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "bin", name), nil
}

// Alert is one alert of the rules loaded, as /api/v1/alerts shows it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending or firing
	// ActiveAt is when it became pending: a new one after a resolve has a new time.
	ActiveAt string `json:"activeAt"`
}

// Alerts are the pending and firing alerts.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := s.get(ctx, "/api/v1/alerts", &data); err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	return data.Alerts, nil
}

// Promtool is the path of promtool, from the same Prometheus build.
func Promtool() (string, error) {
	return binary("promtool")
}
