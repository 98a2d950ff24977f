package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"
)

var (
	dashboardLong = templates.LongDesc(`
		Serve a live web page of the gray rollouts of the namespace (every namespace
		with -A): a list with each rollout's phase, hold points, canary share, gates
		and failure, and a page per rollout with its status, ReplicaSets and pods,
		gates, gray events and the canary's share over time.

		The server runs inside kubectl gray with your kubeconfig; nothing is installed
		in the cluster. Pages update within a second of a change, from one watch per
		resource however many pages are open. Resume, abort, retry and undo are
		offered when the verbs of the same names would accept them (resume, abort
		and retry when gray-controller's status serves them), and sent with your
		credentials through the same code as those verbs.

		It listens on 127.0.0.1 unless --address says otherwise. Every action carries
		a token of this run and must come from the dashboard's own page; --read-only
		offers no action and refuses every one, for showing a release on a shared
		screen. It serves until interrupted.`)

	dashboardExample = templates.Examples(`
		# Show the gray rollouts of the current namespace at http://127.0.0.1:3100/
		kubectl gray dashboard

		# Every namespace, opened in the browser
		kubectl gray dashboard -A --open

		# On a shared screen: look, but no buttons
		kubectl gray dashboard -A --read-only --port 8080`)
)

// DashboardOptions holds what `kubectl gray dashboard` needs.
type DashboardOptions struct {
	// Flags.
	AllNamespaces bool
	Port          int
	Address       string
	Open          bool
	ReadOnly      bool

	// Filled in by Complete.
	Namespace string
	Client    kubernetes.Interface
	Now       func() time.Time
	// OpenBrowser opens a URL in the user's browser.
	OpenBrowser func(url string) error

	genericiooptions.IOStreams
}

// NewDashboardOptions returns DashboardOptions with defaults.
func NewDashboardOptions(streams genericiooptions.IOStreams) *DashboardOptions {
	return &DashboardOptions{Port: 3100, Address: "127.0.0.1", Now: time.Now, OpenBrowser: openBrowser, IOStreams: streams}
}

// NewCmdDashboard returns `kubectl gray dashboard`.
func NewCmdDashboard(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewDashboardOptions(streams)
	cmd := &cobra.Command{
		Use:                   "dashboard [-n NAMESPACE | -A] [--port 3100] [--address 127.0.0.1] [--open] [--read-only]",
		DisableFlagsInUseLine: true,
		Short:                 "Serve a live web page of the gray rollouts, with their actions",
		Long:                  dashboardLong,
		Example:               dashboardExample,
		Args:                  cobra.NoArgs,
		ValidArgsFunction:     cobra.NoFileCompletions,
		RunE:                  runE(f, o),
	}
	cmd.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "Show the gray Deployments of all namespaces.")
	cmd.Flags().IntVar(&o.Port, "port", o.Port, "Port to listen on; 0 picks a free one.")
	cmd.Flags().StringVar(&o.Address, "address", o.Address, "IP address to listen on. Anyone who can reach a non-loopback address acts with your credentials.")
	cmd.Flags().BoolVar(&o.Open, "open", o.Open, "Open the dashboard in the browser.")
	cmd.Flags().BoolVar(&o.ReadOnly, "read-only", o.ReadOnly, "Offer no action and refuse every one.")
	_ = cmd.RegisterFlagCompletionFunc("port", cobra.NoFileCompletions)
	_ = cmd.RegisterFlagCompletionFunc("address", cobra.FixedCompletions([]string{"127.0.0.1", "::1"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the namespace and client from f.
func (o *DashboardOptions) Complete(f cmdutil.Factory, args []string) error {
	var err error
	if o.Namespace, _, err = f.ToRawKubeConfigLoader().Namespace(); err != nil {
		return err
	}
	if o.AllNamespaces {
		o.Namespace = metav1.NamespaceAll
	}
	o.Client, err = f.KubernetesClientSet()
	return err
}

// Validate checks the port and the address.
func (o *DashboardOptions) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("invalid --port %d: must be 0 to 65535", o.Port)
	}
	if net.ParseIP(o.Address) == nil {
		return fmt.Errorf("invalid --address %q: give an IP address, e.g. 127.0.0.1", o.Address)
	}
	return nil
}

// Run serves the dashboard until ctx ends.
func (o *DashboardOptions) Run(ctx context.Context) error {
	scope := "namespace " + o.Namespace
	if o.Namespace == metav1.NamespaceAll {
		scope = "all namespaces"
	}
	c, err := newClusterCache(o.Client, o.Namespace)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.start(ctx); err != nil {
		return err
	}
	token := newToken()
	s, err := newDashboardServer(c, o.Client, scope, token, o.ReadOnly, o.Now)
	if err != nil {
		return err
	}
	go s.list.run(ctx, c.rowChanges)

	listener, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("cannot listen on %s port %d: %w; choose another with --port", o.Address, o.Port, err)
	}
	addr := listener.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(o.ErrOut, "Warning: the dashboard listens on %s: whoever can reach it sees what your credentials see%s.\n", addr.IP, actsWarning(o.ReadOnly))
	}
	url := "http://" + listener.Addr().String() + "/"
	fmt.Fprintf(o.Out, "Serving the gray dashboard of %s at %s (interrupt to stop)\n", scope, url)
	if o.Open {
		if err := o.OpenBrowser(url); err != nil {
			fmt.Fprintf(o.ErrOut, "Warning: could not open a browser (%v); open %s yourself.\n", err, url)
		}
	}

	server := &http.Server{
		Handler:           newGuard(token, listener.Addr()).wrap(s.handler()),
		ReadHeaderTimeout: 10 * time.Second,
		// Streams end with the server's context, so a shutdown does not wait for open pages.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		_ = server.Shutdown(shutdown)
	}()
	if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func actsWarning(readOnly bool) string {
	if readOnly {
		return ""
	}
	return ", and its buttons act with them; add --read-only to show it on a network"
}

// openBrowser opens url with the desktop's opener.
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	return cmd.Start()
}
