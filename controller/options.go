// Package controller wires the gray-controller binary around the Deployment
// controller core: flags and their validation, API client, the check that the
// built-in deployment controller is off, leader election, and the health and
// metrics endpoints.
package controller

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// FieldManager is the field manager of every write the controller makes, and
// the event source of its events.
const FieldManager = grayapi.ControllerFieldManager

// disabledAddress turns an HTTP endpoint off, as in kube-controller-manager
// and controller-runtime.
const disabledAddress = "0"

// Options is everything gray-controller needs to run. Flags bind to the
// exported configuration fields; Complete fills in the rest, which tests set
// directly.
type Options struct {
	Kubeconfig   string
	Mode         grayapi.Mode
	Takeover     grayapi.Takeover
	Workers      int
	KubeAPIQPS   float32
	KubeAPIBurst int
	// ControllerNamespace is gray-controller's own namespace: the platform team's, where the
	// cluster-wide gate definitions and the providers live.
	ControllerNamespace string
	// PrometheusURL, when set, is the provider named prometheus, and PrometheusMinInterval its
	// minInterval.
	PrometheusURL         string
	PrometheusMinInterval time.Duration
	// Namespaces, when set, are the only namespaces whose Deployments alongside mode runs (and
	// whose objects it watches); empty: every namespace.
	Namespaces []string

	LeaderElect              bool
	LeaderElectLeaseName     string
	LeaderElectNamespace     string
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration

	MetricsBindAddress     string
	HealthProbeBindAddress string
	PprofBindAddress       string
	// MetricsSecure serves /metrics (and pprof) over HTTPS to the clients the API server
	// authenticates and authorizes (controller/delegated); MetricsCertDir holds its certificate,
	// a self-signed one when empty.
	MetricsSecure  bool
	MetricsCertDir string

	// MemoryLimit is the container's memory limit (memory.go), empty when unknown.
	MemoryLimit string

	SkipBuiltinControllerCheck bool
	BuiltinCheckWindow         time.Duration

	// Client talks to the API server. Run builds it from Kubeconfig when nil.
	Client kubernetes.Interface
	// Now is the clock of the built-in-controller check.
	Now func() time.Time
	// Identity is this replica's name in the leader-election Lease.
	Identity string
	// PodName is the pod this replica runs in ($POD_NAME), in ControllerNamespace: in instead
	// mode a leader of its own Deployment's stable revision hands the lease to a canary its
	// gates judge (controller/gray/handover.go). Empty: never.
	PodName string
	// ExitOnceElected, for tests only, makes this replica exit as soon as it leads: a version
	// that passes its readiness and fails only once it leads.
	ExitOnceElected bool
}

// NewOptions returns Options with the documented defaults.
func NewOptions() *Options {
	namespace := os.Getenv("POD_NAMESPACE")
	if namespace == "" {
		namespace = "kube-system"
	}
	return &Options{
		Mode:         grayapi.ModeAlongside,
		Takeover:     grayapi.TakeoverAdmission,
		Workers:      5,
		KubeAPIQPS:   20,
		KubeAPIBurst: 30,

		ControllerNamespace:   namespace,
		PodName:               os.Getenv("POD_NAME"),
		PrometheusMinInterval: gates.DefaultMinInterval,

		LeaderElect:              true,
		LeaderElectLeaseName:     "gray-controller",
		LeaderElectNamespace:     namespace,
		LeaderElectLeaseDuration: 15 * time.Second,
		LeaderElectRenewDeadline: 10 * time.Second,
		LeaderElectRetryPeriod:   2 * time.Second,

		HealthProbeBindAddress: ":8081",
		PprofBindAddress:       disabledAddress,
		MetricsSecure:          true,

		BuiltinCheckWindow: 10 * time.Minute,
	}
}

// Flags returns the command-line flags in named sections, bound to o.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets

	fs := fss.FlagSet("controller")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Path to a kubeconfig file. When empty: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account.")
	fs.StringVar((*string)(&o.Mode), "mode", string(o.Mode),
		`"instead" replaces the built-in deployment controller (start kube-controller-manager with --controllers=*,-deployment-controller) and manages every Deployment; "alongside" runs next to it and manages only Deployments annotated with kubegray.io/percent, taking each over (paused, strategy Recreate, strategy saved in kubegray.io/strategy) while its gray rollout runs.`)
	fs.StringVar((*string)(&o.Takeover), "takeover", string(o.Takeover),
		`In alongside mode, how Deployments are taken over: "admission" leaves it to the kubegray-takeover MutatingAdmissionPolicy (Kubernetes 1.36+) and to "kubectl gray set --image", in the write that changes the template; "eager" takes a Deployment over as soon as it is annotated and keeps it taken over while annotated (clusters older than 1.36).`)
	fs.IntVar(&o.Workers, "workers", o.Workers, "Deployments synced concurrently.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Sustained requests per second to the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Requests allowed above --kube-api-qps in a burst.")
	fs.StringVar(&o.ControllerNamespace, "controller-namespace", o.ControllerNamespace,
		"gray-controller's own namespace, where the cluster-wide gate definitions live (ConfigMaps labelled kubegray.io/gates=true; a Deployment's own namespace wins). Defaults to $POD_NAMESPACE, or kube-system when that is unset.")
	fs.StringVar(&o.PrometheusURL, "prometheus-url", o.PrometheusURL,
		"The Prometheus HTTP API that metric gates naming provider prometheus query (http://prometheus.monitoring:9090), a shorthand for a provider of that name with the defaults (docs/gates.md).")
	fs.DurationVar(&o.PrometheusMinInterval, "prometheus-min-interval", o.PrometheusMinInterval,
		"The shortest interval a gate of --prometheus-url's provider may ask for (its minInterval, docs/gates.md).")
	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces,
		"Alongside mode only: the namespaces whose Deployments gray-controller runs, comma-separated; it watches nothing elsewhere, so RoleBindings in these namespaces are all the Deployment access it needs (docs/operations.md). Empty: every namespace. Scope the admission policies' bindings to the same namespaces.")
	fs.BoolVar(&o.SkipBuiltinControllerCheck, "skip-builtin-controller-check", o.SkipBuiltinControllerCheck,
		"In instead mode, start even if the built-in deployment controller seems to be running. Two controllers on the same Deployments fight over their ReplicaSets.")
	fs.DurationVar(&o.BuiltinCheckWindow, "builtin-check-window", o.BuiltinCheckWindow,
		"In instead mode, how far back a write by kube-controller-manager's deployment controller counts as a sign that it is still running.")
	fs.StringVar(&o.PodName, "pod-name", o.PodName,
		"The pod this replica runs in, in --controller-namespace; defaults to $POD_NAME (the manifests pass it through the downward API). It names the replica in the Lease, and in instead mode a leader of gray-controller's own Deployment's stable revision hands the lease to a canary that its gates judge while it leads (docs/operations.md). Empty: never.")
	fs.BoolVar(&o.ExitOnceElected, "test-exit-once-elected", o.ExitOnceElected,
		"For tests only: exit with status 3 as soon as this replica leads.")
	_ = fs.MarkHidden("test-exit-once-elected")

	fs = fss.FlagSet("leader election")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect a leader through a coordination.k8s.io Lease so that only one replica syncs Deployments. Disable only when running a single replica.")
	fs.StringVar(&o.LeaderElectLeaseName, "leader-elect-lease-name", o.LeaderElectLeaseName, "Name of the Lease.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace,
		"Namespace of the Lease. Defaults to $POD_NAMESPACE, or kube-system when that is unset.")
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", o.LeaderElectLeaseDuration,
		"How long standby replicas wait after the last renewal before taking the lease over.")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", o.LeaderElectRenewDeadline,
		"How long the leader keeps retrying a renewal before it gives up leading and exits. Shorter than the lease duration.")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", o.LeaderElectRetryPeriod,
		"Wait between attempts to acquire or renew the lease.")

	fs = fss.FlagSet("serving")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`Address of the Prometheus /metrics endpoint; by default `+secureMetricsAddress+` (HTTPS), or `+plainMetricsAddress+` with --metrics-secure=false. "0" disables it.`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"Serve /metrics and pprof over HTTPS to clients whose bearer token the API server authenticates and whose user may get the path (RBAC nonResourceURLs, ClusterRole gray-controller-metrics-reader). false serves plain HTTP to anyone who can connect.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"Folder of the HTTPS certificate (tls.crt, tls.key, read at each connection); empty: a self-signed one made at start.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`Address of the /healthz and /readyz endpoints (plain HTTP). "0" disables them.`)
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress,
		`Address of Go's /debug/pprof endpoints, served as /metrics is (--metrics-secure). "0", the default, disables them.`)

	fs = fss.FlagSet("memory")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit,
		"The container's memory limit, as a quantity or in bytes (the manifests pass limits.memory through the downward API). The Go garbage collector then aims under 90% of it, so that it collects before the OOM killer acts. GOMEMLIMIT, when set, wins.")

	// klog registers on a Go flag set; pflag turns -v into a shorthand too.
	goFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(goFlags)
	fss.FlagSet("logging").AddGoFlagSet(goFlags)

	return fss
}

// Complete fills in what the flags do not give: the clock and the
// leader-election identity. The API client is built by Run.
func (o *Options) Complete() error {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Identity == "" && o.LeaderElect {
		name := o.PodName
		if name == "" {
			hostname, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("leader-election identity: reading the hostname: %w", err)
			}
			name = hostname
		}
		// The suffix keeps two processes on one host (or a restarted pod
		// racing its predecessor's lease) from sharing an identity.
		o.Identity = name + "_" + string(uuid.NewUUID())
	}
	return nil
}

// Validate reports every invalid flag value at once, each naming the flag.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// The one validation of the mode: everything downstream takes the typed values as given.
	if !o.Mode.Valid() {
		add("invalid --mode %q: must be %q or %q", o.Mode, grayapi.ModeInstead, grayapi.ModeAlongside)
	}
	if !o.Takeover.Valid() {
		add("invalid --takeover %q: must be %q or %q", o.Takeover, grayapi.TakeoverAdmission, grayapi.TakeoverEager)
	}
	if o.Workers < 1 {
		add("invalid --workers %d: must be at least 1", o.Workers)
	}
	if !(o.KubeAPIQPS > 0) {
		add("invalid --kube-api-qps %v: must be greater than 0", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		add("invalid --kube-api-burst %d: must be at least 1", o.KubeAPIBurst)
	}
	for _, msg := range validation.IsDNS1123Label(o.ControllerNamespace) {
		add("invalid --controller-namespace %q: %s", o.ControllerNamespace, msg)
	}
	if _, err := o.providers(); err != nil {
		add("invalid --prometheus-url: %v", err)
	}
	if o.PrometheusMinInterval < gates.MinInterval || o.PrometheusMinInterval > gates.MaxInterval {
		add("invalid --prometheus-min-interval %s: must be from %s to %s", o.PrometheusMinInterval, gates.MinInterval, gates.MaxInterval)
	}
	errs = append(errs, o.validateNamespaces()...)
	if o.Mode == grayapi.ModeInstead && !o.SkipBuiltinControllerCheck && o.BuiltinCheckWindow <= 0 {
		add("invalid --builtin-check-window %v: must be greater than 0 (use --skip-builtin-controller-check to skip the check)", o.BuiltinCheckWindow)
	}

	if o.LeaderElect {
		errs = append(errs, o.validateLeaderElection()...)
	}

	errs = append(errs, validateBindAddress("--metrics-bind-address", o.metricsAddress())...)
	errs = append(errs, validateBindAddress("--health-probe-bind-address", o.HealthProbeBindAddress)...)
	errs = append(errs, validateBindAddress("--pprof-bind-address", o.PprofBindAddress)...)
	if _, err := parseMemoryLimit(o.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	servers := []struct{ flag, address string }{
		{"--metrics-bind-address", o.metricsAddress()},
		{"--health-probe-bind-address", o.HealthProbeBindAddress},
		{"--pprof-bind-address", o.PprofBindAddress},
	}
	for i, a := range servers {
		for _, b := range servers[i+1:] {
			if a.address != disabledAddress && a.address == b.address {
				add("%s and %s are both %q: the two servers need different addresses", a.flag, b.flag, a.address)
			}
		}
	}
	return errors.Join(errs...)
}

func (o *Options) validateLeaderElection() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, msg := range validation.IsDNS1123Subdomain(o.LeaderElectLeaseName) {
		add("invalid --leader-elect-lease-name %q: %s", o.LeaderElectLeaseName, msg)
	}
	for _, msg := range validation.IsDNS1123Label(o.LeaderElectNamespace) {
		add("invalid --leader-elect-namespace %q: %s", o.LeaderElectNamespace, msg)
	}

	lease, renew, retry := o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline, o.LeaderElectRetryPeriod
	positive := true
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{
		{"--leader-elect-lease-duration", lease},
		{"--leader-elect-renew-deadline", renew},
		{"--leader-elect-retry-period", retry},
	} {
		if d.value <= 0 {
			add("invalid %s %v: must be greater than 0", d.flag, d.value)
			positive = false
		}
	}
	if !positive {
		return errs
	}
	// The same orderings client-go's leader elector insists on, checked here
	// so the error names our flags.
	if renew >= lease {
		add("invalid --leader-elect-renew-deadline %v: must be shorter than --leader-elect-lease-duration %v, "+
			"or a standby could take the lease while the leader still believes it holds it", renew, lease)
	}
	if minRenew := time.Duration(leaderelection.JitterFactor * float64(retry)); renew <= minRenew {
		add("invalid --leader-elect-renew-deadline %v: must be longer than %v (%v × --leader-elect-retry-period %v), "+
			"to leave room for at least one retry", renew, minRenew, leaderelection.JitterFactor, retry)
	}
	return errs
}

// validateNamespaces refuses --namespaces in instead mode, where gray-controller is the cluster's
// only Deployment controller (a Deployment elsewhere would have none), and names that are not
// namespace names or come twice.
func (o *Options) validateNamespaces() []error {
	if len(o.Namespaces) == 0 {
		return nil
	}
	if o.Mode == grayapi.ModeInstead {
		return []error{fmt.Errorf("invalid --namespaces %q with --mode=%s: in instead mode gray-controller is the cluster's only Deployment controller, "+
			"and the Deployments of every other namespace would have none; use --mode=%s, or leave --namespaces empty",
			strings.Join(o.Namespaces, ","), grayapi.ModeInstead, grayapi.ModeAlongside)}
	}
	var errs []error
	seen := map[string]bool{}
	for _, ns := range o.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, fmt.Errorf("invalid --namespaces %q: namespace %q: %s", strings.Join(o.Namespaces, ","), ns, msg))
		}
		if seen[ns] {
			errs = append(errs, fmt.Errorf("invalid --namespaces %q: namespace %q is named twice", strings.Join(o.Namespaces, ","), ns))
		}
		seen[ns] = true
	}
	return errs
}

func validateBindAddress(flagName, address string) []error {
	if address == disabledAddress {
		return nil
	}
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return []error{fmt.Errorf(`invalid %s %q: want "host:port", ":port" or "0" to disable: %w`, flagName, address, err)}
	}
	// Port 0 (any free port) is allowed: tests use it.
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return []error{fmt.Errorf("invalid %s %q: port %q is not a number from 0 to 65535", flagName, address, port)}
	}
	return nil
}

// providers are the metric gates' providers the flags give.
func (o *Options) providers() ([]*gates.Provider, error) {
	if o.PrometheusURL == "" {
		return nil, nil
	}
	p, err := gates.PrometheusURLProvider(o.PrometheusURL)
	if err != nil {
		return nil, err
	}
	p.MinInterval = o.PrometheusMinInterval
	return []*gates.Provider{p}, nil
}

// The /metrics addresses when --metrics-bind-address is not given: every interface for HTTPS,
// which checks who asks; the loopback only for plain HTTP, which cannot.
const (
	secureMetricsAddress = ":8443"
	plainMetricsAddress  = "127.0.0.1:8080"
)

// metricsAddress is where /metrics is served: --metrics-bind-address, or its default for
// --metrics-secure.
func (o *Options) metricsAddress() string {
	switch {
	case o.MetricsBindAddress != "":
		return o.MetricsBindAddress
	case o.MetricsSecure:
		return secureMetricsAddress
	}
	return plainMetricsAddress
}
