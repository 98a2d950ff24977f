//go:build conformance

// Package conformance holds a test main for Kubernetes' own e2e tests of
// test/e2e/apps at the k8s.io/kubernetes version this module pins. It
// carries the conformance build tag so that `go test ./...`, vet and lint
// skip it: compiling the e2e framework takes minutes and the binary is only
// meaningful against a running cluster. `make conformance` builds it with
// `go test -c -tags conformance` and test/e2e's TestUpstreamDeploymentE2E
// runs it against an instead-mode control plane.
package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"

	// The specs: the sig-apps suite, of which we focus on Deployment.
	_ "k8s.io/kubernetes/test/e2e/apps"
	// Namespace dumps on failure, and the all-nodes-ready check after each
	// spec, as upstream's own e2e.test has them.
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
)

// TestMain gives the framework its flags (--kubeconfig, --provider,
// --report-dir, ...) before the testing package runs anything, because the
// framework reads them while it builds the spec tree.
func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		// A stray word would otherwise be ignored and the whole suite run.
		fmt.Fprintf(os.Stderr, "conformance: unexpected arguments: %q\n", flag.Args())
		os.Exit(2)
	}
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

// TestUpstreamE2E runs the specs that --ginkgo.focus and --ginkgo.skip pick.
func TestUpstreamE2E(t *testing.T) {
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "upstream e2e against gray-controller", suiteConfig, reporterConfig)
}
