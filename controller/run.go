package controller

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/delegated"
	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/graysync"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/version"
)

// minResyncPeriod matches kube-controller-manager's default
// --min-resync-period: Deployments are re-synced every 12 to 24 hours even
// without a change, like upstream.
const minResyncPeriod = 12 * time.Hour

// shutdownTimeout bounds how long in-flight probe and scrape requests may
// delay exit.
const shutdownTimeout = 5 * time.Second

// Run runs the controller until ctx is cancelled, then shuts down in order:
// workers, lease, HTTP servers. It returns an error if it cannot start, if
// the built-in deployment controller is active in instead mode, or if the
// leader-election lease is lost.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("gray-controller")
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Starting gray-controller", "version", version.Get().String(), "mode", o.Mode,
		"workers", o.Workers, "leaderElect", o.LeaderElect)

	metrics.RecordBuildInfo(string(o.Mode))
	if err := applyMemoryLimit(logger, o.MemoryLimit); err != nil {
		return err
	}
	client := o.Client
	if client == nil {
		var err error
		if client, err = newClient(o.Kubeconfig, o.KubeAPIQPS, o.KubeAPIBurst); err != nil {
			return err
		}
	}

	if o.Mode == grayapi.ModeInstead {
		if o.SkipBuiltinControllerCheck {
			logger.Info("Not checking for the built-in deployment controller (--skip-builtin-controller-check)")
		} else if err := checkBuiltinController(ctx, client, o.Now(), o.BuiltinCheckWindow); err != nil {
			return err
		}
	}
	if o.Mode.Alongside() {
		if err := checkAlongsidePolicies(ctx, client, o.Takeover, o.Namespaces); err != nil {
			return err
		}
	}

	// The broadcaster outlives ctx so that events of the shutdown itself
	// (the lease changing hands) are still sent; Shutdown ends it.
	broadcaster := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: FieldManager})

	ready := newReadiness(o.LeaderElect)
	var checks []healthChecker
	var watchdog *leaderelection.HealthzAdaptor
	if o.LeaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(leaderWatchdogTimeout)
		checks = append(checks, watchdog)
	}

	// A server that fails after start-up stops the whole process: a
	// controller without probes gets killed by the kubelet anyway.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serverErrs := make(chan error, 2)
	fail := func(err error) {
		serverErrs <- err
		cancel()
	}
	servers, err := o.startServers(ctx, client, newHealthHandler(checks, ready), fail)
	defer stopServers(ctx, servers)
	if err != nil {
		return err
	}

	standby, stopStandby := context.WithCancel(ctx)
	defer stopStandby()
	if o.LeaderElect {
		go leadCheck{client: client, leaseNamespace: o.LeaderElectNamespace, leaseName: o.LeaderElectLeaseName,
			namespaces: o.Namespaces, ownNamespace: o.ControllerNamespace}.watch(standby, ready.couldLead)
	}
	lead := func(ctx context.Context) error {
		stopStandby()
		if o.ExitOnceElected {
			logger.Error(nil, "Exiting once elected (--test-exit-once-elected): a version that fails only when it leads")
			klog.Flush()
			os.Exit(3)
		}
		ready.startedLeading()
		ctx, stepDown := context.WithCancelCause(ctx)
		defer stepDown(nil)
		err := o.runController(ctx, client, recorder, ready, o.handOver(stepDown))
		if cause := context.Cause(ctx); errors.Is(cause, errHandedOver) {
			return cause
		}
		return err
	}
	if o.LeaderElect {
		election := &leaderElection{
			client:        client,
			namespace:     o.LeaderElectNamespace,
			name:          o.LeaderElectLeaseName,
			identity:      o.Identity,
			leaseDuration: o.LeaderElectLeaseDuration,
			renewDeadline: o.LeaderElectRenewDeadline,
			retryPeriod:   o.LeaderElectRetryPeriod,
			recorder:      recorder,
			watchdog:      watchdog,
		}
		if err = election.run(ctx, lead); errors.Is(err, errHandedOver) {
			// The Lease is released: this process exits, and its pod restarts it as a standby.
			logger.Info("Handed the lease over; exiting", "reason", err.Error())
			err = nil
		}
	} else if err = lead(ctx); err == nil && ctx.Err() == nil {
		err = errors.New("the controller stopped on its own")
	}

	select {
	case serverErr := <-serverErrs:
		return serverErr
	default:
	}
	if err != nil {
		return err
	}
	logger.Info("Shut down cleanly")
	return nil
}

// errHandedOver is why a leader stops that handed its lease to its own Deployment's canary.
var errHandedOver = errors.New("handed the leader-election lease to the canary of gray-controller's own Deployment")

// handOver is the deployment controller's Options.HandOver: in instead mode, for a replica that
// knows its pod and elects a leader, it stops leading with errHandedOver (stepDown cancels the
// leading context); nil otherwise, and no Deployment is ever handed over.
func (o *Options) handOver(stepDown context.CancelCauseFunc) func(reason string) {
	if o.Mode != grayapi.ModeInstead || !o.LeaderElect || o.PodName == "" {
		return nil
	}
	return func(reason string) { stepDown(fmt.Errorf("%w: %s", errHandedOver, reason)) }
}

// runController runs the Deployment controller until ctx is cancelled and
// its workers have stopped.
func (o *Options) runController(ctx context.Context, client kubernetes.Interface, recorder record.EventRecorder, ready *readiness,
	handOver func(reason string)) error {
	resync := minResyncPeriod + rand.N(minResyncPeriod)
	caches := deployment.AllNamespaces(informers.NewSharedInformerFactory(client, resync),
		informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(o.ControllerNamespace)), o.ControllerNamespace)
	if len(o.Namespaces) > 0 {
		caches = deployment.SomeNamespaces(client, resync, o.Namespaces, o.ControllerNamespace)
	}
	providers, err := o.providers()
	if err != nil {
		return err
	}
	// The gray side is the deployment controller's one hook (deployment.GrayHook), built from it.
	var graySide *graysync.Controller
	dc, err := deployment.NewDeploymentController(ctx, caches, client, deployment.Options{
		FieldManager: FieldManager,
		Recorder:     recorder,
		Gray: func(ctx context.Context, port *deployment.DeploymentController) (deployment.GrayHook, error) {
			var err error
			graySide, err = graysync.New(ctx, port, caches, graysync.Options{
				Mode:      o.Mode,
				Takeover:  o.Takeover,
				Providers: providers,
				Self:      types.NamespacedName{Namespace: o.ControllerNamespace, Name: o.PodName},
				HandOver:  handOver,
			})
			return graySide, err
		},
	})
	if err != nil {
		return fmt.Errorf("creating the deployment controller: %w", err)
	}
	if err := metrics.RegisterRollouts(string(o.Mode), graySide.GrayRollouts); err != nil {
		return fmt.Errorf("registering the per-rollout metrics: %w", err)
	}
	ready.controllerStarted(dc.HasSynced)
	caches.Start(ctx)
	// Shutdown waits for the informers, which stop with ctx.
	defer caches.Shutdown()
	dc.Run(ctx, o.Workers)
	return nil
}

// startServers starts the health-probe, metrics and pprof servers that are not disabled; with
// --metrics-secure the last two serve HTTPS to the clients the API server vouches for. On error
// it returns the servers already started, for stopServers.
func (o *Options) startServers(ctx context.Context, client kubernetes.Interface, health http.Handler, fail func(error)) ([]*http.Server, error) {
	logger := klog.FromContext(ctx)
	metricsHandler, pprof := metrics.Handler(), pprofHandler()
	var tlsConfig *tls.Config
	if o.MetricsSecure && (o.metricsAddress() != disabledAddress || o.PprofBindAddress != disabledAddress) {
		var err error
		if tlsConfig, err = delegated.TLSConfig(o.MetricsCertDir, delegated.HostName()); err != nil {
			return nil, err
		}
		metricsHandler, pprof = delegated.Protect(metrics.Path, metricsHandler, client), delegated.Protect(pprofPath, pprof, client)
	}
	var servers []*http.Server
	for _, s := range []struct {
		name, flag, address string
		handler             http.Handler
		tls                 *tls.Config
	}{
		{"health probe", "--health-probe-bind-address", o.HealthProbeBindAddress, health, nil},
		{"metrics", "--metrics-bind-address", o.metricsAddress(), metricsHandler, tlsConfig},
		{"pprof", "--pprof-bind-address", o.PprofBindAddress, pprof, tlsConfig},
	} {
		if s.address == disabledAddress {
			logger.Info("HTTP server disabled", "server", s.name)
			continue
		}
		srv, err := serve(ctx, s.name, s.flag, s.address, s.handler, s.tls, fail)
		if err != nil {
			return servers, err
		}
		servers = append(servers, srv)
	}
	return servers, nil
}

// pprofPath is the folder pprofHandler serves.
const pprofPath = "/debug/pprof/"

// pprofHandler serves Go's runtime profiles (heap, goroutines, CPU) under pprofPath.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPath, pprof.Index)
	mux.HandleFunc(pprofPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPath+"profile", pprof.Profile)
	mux.HandleFunc(pprofPath+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPath+"trace", pprof.Trace)
	return mux
}

// stopServers lets in-flight requests finish, within shutdownTimeout.
func stopServers(ctx context.Context, servers []*http.Server) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Shutting down HTTP server", "address", srv.Addr)
		}
	}
}

// newClient builds the API client from kubeconfig, or from $KUBECONFIG,
// ~/.kube/config or the in-cluster service account when it is empty.
func newClient(kubeconfig string, qps float32, burst int) (kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if kubeconfig != "" {
			return nil, fmt.Errorf("loading --kubeconfig %q: %w", kubeconfig, err)
		}
		return nil, fmt.Errorf("no API server configuration: pass --kubeconfig, set $KUBECONFIG, or run in a pod: %w", err)
	}
	config.UserAgent = version.UserAgent("gray-controller")
	config.QPS = qps
	config.Burst = burst
	// Protobuf is cheaper than JSON on the wire and to decode, and every
	// type the controller touches is built in.
	config.ContentType = runtime.ContentTypeProtobuf
	config.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the API client for %s: %w", config.Host, err)
	}
	return client, nil
}

// serve listens on address at once, so that a busy port fails start-up with
// a clear error, then serves in the background until Shutdown. A later
// serving error is passed to fail.
func serve(ctx context.Context, name, flag, address string, handler http.Handler, tlsConfig *tls.Config, fail func(error)) (*http.Server, error) {
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("%s server: listening on %s %q: %w", name, flag, address, err)
	}
	if tlsConfig != nil {
		listener = tls.NewListener(listener, tlsConfig)
	}
	srv := &http.Server{
		Addr:              listener.Addr().String(),
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := srv.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
			fail(fmt.Errorf("%s server on %s: %w", name, srv.Addr, err))
		}
	}()
	klog.FromContext(ctx).Info("Serving", "server", name, "address", srv.Addr, "https", tlsConfig != nil)
	return srv, nil
}
