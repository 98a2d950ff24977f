package e2e

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubegray/kubectl-gray/test/cluster"
)

// upstreamFocus picks upstream's Deployment specs out of the whole sig-apps
// suite the binary holds (DaemonSet, StatefulSet, Job... are not ours).
const upstreamFocus = `\[sig-apps\] Deployment`

// upstreamSkips are the specs of the focus that cannot run here, each with
// the reason the README gives. The key is matched as a regular expression
// against the spec's full name.
var upstreamSkips = map[string]string{
	// f.WithProvider("aws", "azure", "gce"): it needs a cloud load balancer
	// in front of real pods, which neither kwok nor --provider=skeleton has.
	`should not disrupt a cloud load-balancer's connectivity during rollout`: "needs a cloud provider's load balancer (aws, azure or gce)",
}

// TestUpstreamDeploymentE2E runs Kubernetes' own Deployment e2e tests
// (test/e2e/apps/deployment.go at the pinned k8s.io/kubernetes) against a
// control plane whose kube-controller-manager has no deployment controller,
// with gray-controller in instead mode as its ServiceAccount doing the work.
// They are the tests upstream holds its own controller to, so every spec of
// the focus must pass, apart from upstreamSkips.
//
// The suite binary is big and slow to build, so this test only runs when
// KUBEGRAY_UPSTREAM_E2E names it (`make conformance` builds it from
// test/conformance and sets it). KUBEGRAY_UPSTREAM_E2E_SKIP adds a regular
// expression of specs to skip (for a control plane older than the suite);
// KUBEGRAY_UPSTREAM_E2E_REPORT keeps the suite's log and JUnit report in
// that folder instead of a temporary one.
func TestUpstreamDeploymentE2E(t *testing.T) {
	suite := os.Getenv("KUBEGRAY_UPSTREAM_E2E")
	if suite == "" {
		t.Skip("KUBEGRAY_UPSTREAM_E2E is not set; `make conformance` builds upstream's suite and runs this test")
	}
	reportDir := os.Getenv("KUBEGRAY_UPSTREAM_E2E_REPORT")
	if reportDir == "" {
		reportDir = t.TempDir()
	} else if err := os.MkdirAll(reportDir, 0o755); err != nil {
		t.Fatal(err)
	}
	skips := upstreamSkipPattern(os.Getenv("KUBEGRAY_UPSTREAM_E2E_SKIP"))

	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")

	logPath := filepath.Join(reportDir, "suite.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite,
		"--kubeconfig="+c.Kubeconfig,
		"--provider=skeleton",
		"--ginkgo.focus="+upstreamFocus,
		"--ginkgo.skip="+skips,
		"--ginkgo.v",
		"--ginkgo.no-color",
		"--ginkgo.timeout=35m",
		"--report-dir="+reportDir,
		// The framework writes scratch files here; keep them with the report.
		"--e2e-output-dir="+reportDir,
	)
	// With -v the suite's progress shows as it runs; the log keeps all of it.
	cmd.Stdout = io.MultiWriter(logFile, t.Output())
	cmd.Stderr = cmd.Stdout
	began := time.Now()
	runErr := cmd.Run()
	t.Logf("upstream suite ran in %v; log %s", time.Since(began).Round(time.Second), logPath)

	specs, err := readUpstreamReport(filepath.Join(reportDir, "junit_01.xml"))
	if err != nil {
		t.Fatalf("suite exited with %v and left no readable report: %v", runErr, err)
	}
	checkUpstreamSpecs(t, specs, skips)
	if runErr != nil {
		t.Errorf("upstream suite: %v (see %s)", runErr, logPath)
	}
}

// upstreamSkipPattern joins upstreamSkips and an extra pattern into the one
// --ginkgo.skip expression.
func upstreamSkipPattern(extra string) string {
	var parts []string
	for pattern := range upstreamSkips {
		parts = append(parts, pattern)
	}
	sort.Strings(parts)
	if extra != "" {
		parts = append(parts, extra)
	}
	return strings.Join(parts, "|")
}

// upstreamSpec is one spec of the JUnit report the e2e framework writes.
type upstreamSpec struct {
	Name    string `xml:"name,attr"`
	Status  string `xml:"status,attr"`
	Seconds string `xml:"time,attr"`
	Failure *struct {
		Text string `xml:",chardata"`
	} `xml:"failure"`
}

func readUpstreamReport(path string) ([]upstreamSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var report struct {
		Suites []struct {
			Specs []upstreamSpec `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &report); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var specs []upstreamSpec
	for _, s := range report.Suites {
		specs = append(specs, s.Specs...)
	}
	return specs, nil
}

// checkUpstreamSpecs logs one line per Deployment spec and fails the test
// for any that failed, or that did not run without being meant to skip.
// An empty focus would pass vacuously, so no spec at all is a failure too.
func checkUpstreamSpecs(t *testing.T, specs []upstreamSpec, skips string) {
	t.Helper()
	focus := regexp.MustCompile(upstreamFocus)
	skip := regexp.MustCompile(skips)
	var ran int
	for _, s := range specs {
		if !focus.MatchString(s.Name) {
			continue
		}
		seconds, _ := strconv.ParseFloat(s.Seconds, 64)
		t.Logf("%-7s %5.1fs  %s", s.Status, seconds, strings.TrimPrefix(s.Name, "[It] "))
		switch {
		case s.Status == "passed":
			ran++
		case s.Status == "skipped" && skip.MatchString(s.Name):
		case s.Failure != nil:
			t.Errorf("%s: %s\n%s", s.Status, s.Name, strings.TrimSpace(s.Failure.Text))
		default:
			t.Errorf("%s (not in the skip list): %s", s.Status, s.Name)
		}
	}
	if ran == 0 {
		t.Errorf("no upstream Deployment spec passed (focus %q)", upstreamFocus)
	}
}
