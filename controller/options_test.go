package controller

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestNewOptionsNamespaces(t *testing.T) {
	tests := []struct {
		name         string
		podNamespace string
		want         string
	}{
		{name: "in a pod with the downward API", podNamespace: "gray-system", want: "gray-system"},
		{name: "POD_NAMESPACE unset", podNamespace: "", want: "kube-system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.podNamespace)
			o := NewOptions()
			if o.LeaderElectNamespace != tt.want || o.ControllerNamespace != tt.want {
				t.Errorf("LeaderElectNamespace = %q, ControllerNamespace = %q, want %q for both", o.LeaderElectNamespace, o.ControllerNamespace, tt.want)
			}
		})
	}
}

func TestFlagsBindToOptions(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fss := o.Flags()
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	err := fs.Parse([]string{
		"--kubeconfig=/etc/kube/config", "--mode=instead", "--takeover=eager", "--workers=3",
		"--kube-api-qps=50", "--kube-api-burst=100", "--controller-namespace=platform", "--namespaces=shop,web",
		"--prometheus-url=http://prometheus.monitoring:9090", "--prometheus-min-interval=2s",
		"--leader-elect=false", "--leader-elect-lease-name=gc", "--leader-elect-namespace=ops",
		"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=4s",
		"--metrics-bind-address=127.0.0.1:9090", "--health-probe-bind-address=0", "--pprof-bind-address=127.0.0.1:6060",
		"--metrics-secure=false", "--metrics-cert-dir=/etc/gray-controller/tls",
		"--memory-limit=268435456", "--skip-builtin-controller-check", "--builtin-check-window=1h",
		"--pod-name=gray-controller-7d9f8c5b4-x2x9q", "--test-exit-once-elected",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Kubeconfig: "/etc/kube/config", Mode: "instead", Takeover: "eager", Workers: 3, KubeAPIQPS: 50, KubeAPIBurst: 100, ControllerNamespace: "platform",
		PrometheusURL: "http://prometheus.monitoring:9090", PrometheusMinInterval: 2 * time.Second,
		Namespaces:  []string{"shop", "web"},
		LeaderElect: false, LeaderElectLeaseName: "gc", LeaderElectNamespace: "ops",
		LeaderElectLeaseDuration: 30 * time.Second, LeaderElectRenewDeadline: 20 * time.Second, LeaderElectRetryPeriod: 4 * time.Second,
		MetricsBindAddress: "127.0.0.1:9090", HealthProbeBindAddress: "0", PprofBindAddress: "127.0.0.1:6060",
		MetricsSecure: false, MetricsCertDir: "/etc/gray-controller/tls",
		MemoryLimit: "268435456", SkipBuiltinControllerCheck: true, BuiltinCheckWindow: time.Hour,
		PodName: "gray-controller-7d9f8c5b4-x2x9q", ExitOnceElected: true,
	}
	if !reflect.DeepEqual(*o, want) {
		t.Errorf("options after parsing:\n got %+v\nwant %+v", *o, want)
	}
	if f := fs.ShorthandLookup("v"); f == nil || f.Name != "v" {
		t.Errorf("klog's -v is not registered as a shorthand: %+v", f)
	}
}

func TestDefaultsAreUpstreamLike(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("POD_NAME", "gray-controller-7d9f8c5b4-x2x9q")
	o := NewOptions()
	want := Options{
		Mode: "alongside", Takeover: "admission", Workers: 5, KubeAPIQPS: 20, KubeAPIBurst: 30, ControllerNamespace: "kube-system",
		LeaderElect: true, LeaderElectLeaseName: "gray-controller", LeaderElectNamespace: "kube-system",
		LeaderElectLeaseDuration: 15 * time.Second, LeaderElectRenewDeadline: 10 * time.Second, LeaderElectRetryPeriod: 2 * time.Second,
		HealthProbeBindAddress: ":8081", PprofBindAddress: "0", MetricsSecure: true,
		BuiltinCheckWindow: 10 * time.Minute, PodName: "gray-controller-7d9f8c5b4-x2x9q", PrometheusMinInterval: 10 * time.Second,
	}
	if !reflect.DeepEqual(*o, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", *o, want)
	}
	// HTTPS on every interface, which checks who asks; plain HTTP on the loopback only.
	if got := o.metricsAddress(); got != ":8443" {
		t.Errorf("the default /metrics address is %q, want :8443", got)
	}
	o.MetricsSecure = false
	if got := o.metricsAddress(); got != "127.0.0.1:8080" {
		t.Errorf("the default plain /metrics address is %q, want 127.0.0.1:8080", got)
	}
}

func TestValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.Mode = grayapi.ModeInstead
		o.LeaderElectNamespace, o.ControllerNamespace = "kube-system", "kube-system"
		return o
	}
	tests := []struct {
		name   string
		modify func(o *Options)
		// wantErrs are substrings that must all appear; empty means valid.
		wantErrs []string
	}{
		{name: "instead mode with defaults", modify: func(o *Options) {}},
		{name: "alongside, the default", modify: func(o *Options) { o.Mode = grayapi.ModeAlongside }},
		{name: "alongside with eager takeover", modify: func(o *Options) { o.Mode, o.Takeover = grayapi.ModeAlongside, grayapi.TakeoverEager }},
		{
			name:     "unknown takeover",
			modify:   func(o *Options) { o.Mode, o.Takeover = grayapi.ModeAlongside, "webhook" },
			wantErrs: []string{`invalid --takeover "webhook": must be "admission" or "eager"`},
		},
		{
			name:     "unknown mode",
			modify:   func(o *Options) { o.Mode = "replace" },
			wantErrs: []string{`invalid --mode "replace": must be "instead" or "alongside"`},
		},
		{
			name:     "no workers",
			modify:   func(o *Options) { o.Workers = 0 },
			wantErrs: []string{"invalid --workers 0: must be at least 1"},
		},
		{
			name:     "zero qps and burst",
			modify:   func(o *Options) { o.KubeAPIQPS, o.KubeAPIBurst = 0, 0 },
			wantErrs: []string{"invalid --kube-api-qps 0: must be greater than 0", "invalid --kube-api-burst 0: must be at least 1"},
		},
		{
			name:     "a provider floor below a second",
			modify:   func(o *Options) { o.PrometheusMinInterval = 500 * time.Millisecond },
			wantErrs: []string{"invalid --prometheus-min-interval 500ms: must be from 1s to 24h0m0s"},
		},
		{
			name:     "empty check window",
			modify:   func(o *Options) { o.BuiltinCheckWindow = 0 },
			wantErrs: []string{"invalid --builtin-check-window 0s: must be greater than 0"},
		},
		{
			name:   "the window does not matter when the check is skipped",
			modify: func(o *Options) { o.BuiltinCheckWindow, o.SkipBuiltinControllerCheck = 0, true },
		},
		{
			name:     "lease name with capitals",
			modify:   func(o *Options) { o.LeaderElectLeaseName = "Gray" },
			wantErrs: []string{`invalid --leader-elect-lease-name "Gray": a lowercase RFC 1123 subdomain`},
		},
		{
			name:     "namespace with a dot",
			modify:   func(o *Options) { o.LeaderElectNamespace = "kube.system" },
			wantErrs: []string{`invalid --leader-elect-namespace "kube.system": must not contain dots`},
		},
		{
			name:   "alongside in some namespaces",
			modify: func(o *Options) { o.Mode, o.Namespaces = grayapi.ModeAlongside, []string{"shop", "web"} },
		},
		{
			name:   "instead mode in some namespaces",
			modify: func(o *Options) { o.Namespaces = []string{"shop"} },
			wantErrs: []string{`invalid --namespaces "shop" with --mode=instead: in instead mode gray-controller is the cluster's only Deployment controller, ` +
				`and the Deployments of every other namespace would have none; use --mode=alongside, or leave --namespaces empty`},
		},
		{
			name:   "a namespace that cannot be one, and one named twice",
			modify: func(o *Options) { o.Mode, o.Namespaces = grayapi.ModeAlongside, []string{"shop", "Web", "shop"} },
			wantErrs: []string{`invalid --namespaces "shop,Web,shop": namespace "Web": a lowercase RFC 1123 label`,
				`invalid --namespaces "shop,Web,shop": namespace "shop" is named twice`},
		},
		{
			name:     "controller namespace not a DNS label",
			modify:   func(o *Options) { o.ControllerNamespace = "Platform" },
			wantErrs: []string{`invalid --controller-namespace "Platform": a lowercase RFC 1123 label`},
		},
		{
			name:   "lease flags are ignored without leader election",
			modify: func(o *Options) { o.LeaderElect, o.LeaderElectNamespace, o.LeaderElectRetryPeriod = false, "", 0 },
		},
		{
			name:     "renew deadline not shorter than the lease",
			modify:   func(o *Options) { o.LeaderElectRenewDeadline = 15 * time.Second },
			wantErrs: []string{"invalid --leader-elect-renew-deadline 15s: must be shorter than --leader-elect-lease-duration 15s"},
		},
		{
			// 1.2 × 9s = 10.8s, and the renew deadline is 10s.
			name:     "no room to retry a renewal",
			modify:   func(o *Options) { o.LeaderElectRetryPeriod = 9 * time.Second },
			wantErrs: []string{"invalid --leader-elect-renew-deadline 10s: must be longer than 10.8s (1.2 × --leader-elect-retry-period 9s)"},
		},
		{
			name:   "renew deadline just above 1.2 × retry",
			modify: func(o *Options) { o.LeaderElectRetryPeriod = 8 * time.Second }, // 9.6s < 10s
		},
		{
			name:     "negative retry period",
			modify:   func(o *Options) { o.LeaderElectRetryPeriod = -time.Second },
			wantErrs: []string{"invalid --leader-elect-retry-period -1s: must be greater than 0"},
		},
		{
			name:     "bind address without a port",
			modify:   func(o *Options) { o.MetricsBindAddress = "localhost" },
			wantErrs: []string{`invalid --metrics-bind-address "localhost": want "host:port", ":port" or "0" to disable`},
		},
		{
			name:     "bind address with a port name",
			modify:   func(o *Options) { o.HealthProbeBindAddress = ":http" },
			wantErrs: []string{`invalid --health-probe-bind-address ":http": port "http" is not a number from 0 to 65535`},
		},
		{
			name:     "bind address with a port out of range",
			modify:   func(o *Options) { o.HealthProbeBindAddress = "127.0.0.1:70000" },
			wantErrs: []string{`invalid --health-probe-bind-address "127.0.0.1:70000": port "70000"`},
		},
		{
			name:     "both servers on one address",
			modify:   func(o *Options) { o.HealthProbeBindAddress = ":8443" },
			wantErrs: []string{`--metrics-bind-address and --health-probe-bind-address are both ":8443"`},
		},
		{
			name:     "profiles on the metrics address",
			modify:   func(o *Options) { o.PprofBindAddress = o.metricsAddress() },
			wantErrs: []string{`--metrics-bind-address and --pprof-bind-address are both ":8443"`},
		},
		{
			name:   "profiles on a loopback port",
			modify: func(o *Options) { o.PprofBindAddress = "127.0.0.1:6060" },
		},
		{
			name:     "memory limit that is no quantity",
			modify:   func(o *Options) { o.MemoryLimit = "256 MiB" },
			wantErrs: []string{`invalid --memory-limit "256 MiB"`},
		},
		{
			name:   "memory limit in bytes, as the downward API gives it",
			modify: func(o *Options) { o.MemoryLimit = "268435456" },
		},
		{
			name:   "both servers disabled",
			modify: func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0" },
		},
		{
			name:   "any free port, as tests use",
			modify: func(o *Options) { o.MetricsBindAddress, o.HealthProbeBindAddress = "127.0.0.1:0", "[::1]:0" },
		},
		{
			name: "every problem is reported at once",
			modify: func(o *Options) {
				o.Mode, o.Workers, o.MetricsBindAddress = "", -1, "nope"
			},
			wantErrs: []string{`invalid --mode ""`, "invalid --workers -1", `invalid --metrics-bind-address "nope"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.modify(o)
			err := o.Validate()
			if len(tt.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors containing %q", tt.wantErrs)
			}
			for _, want := range tt.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %q\nwant it to contain %q", err, want)
				}
			}
		})
	}
}

func TestCompleteIdentity(t *testing.T) {
	t.Setenv("POD_NAME", "")
	o := NewOptions()
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	hostname, _, found := strings.Cut(o.Identity, "_")
	if want, _ := os.Hostname(); !found || hostname != want || len(o.Identity) <= len(hostname)+1 {
		t.Errorf("Identity = %q, want %s_<random suffix>", o.Identity, want)
	}
	// In a pod the identity names the pod (--pod-name): who leads is read from the Lease.
	inPod := NewOptions()
	inPod.PodName = "gray-controller-7d9f8c5b4-x2x9q"
	if err := inPod.Complete(); err != nil {
		t.Fatal(err)
	}
	if pod, _, _ := strings.Cut(inPod.Identity, "_"); pod != inPod.PodName || len(inPod.Identity) <= len(pod)+1 {
		t.Errorf("Identity = %q, want %s_<random suffix>", inPod.Identity, inPod.PodName)
	}
	other := NewOptions()
	if err := other.Complete(); err != nil {
		t.Fatal(err)
	}
	if other.Identity == o.Identity {
		t.Errorf("two processes on one host got the same identity %q", o.Identity)
	}
	if o.Now == nil {
		t.Error("Complete left Now unset")
	}

	preset := NewOptions()
	preset.Identity = "fixed"
	if err := preset.Complete(); err != nil {
		t.Fatal(err)
	}
	if preset.Identity != "fixed" {
		t.Errorf("Complete replaced a preset identity with %q", preset.Identity)
	}
}
