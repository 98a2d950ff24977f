package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/pkg/promquery"
)

var (
	gateTestLong = templates.LongDesc(`
		Measure a Deployment's gates now, for its current canary and stable revision, and
		show the value, the outcome and why, as gray-controller would judge them. Nothing is
		written: the hold and its records are gray-controller's.

		A metric gate's query is rendered with the canary's and the stable revision's
		pod-template-hash, the namespace and the window since the hold settled, scoped to the
		namespace, then run against its provider (read from the ConfigMaps labelled
		kubegray.io/gates=providers in gray-controller's namespace). A provider inside the
		cluster (http://NAME.NAMESPACE[.svc...]:PORT) is reached through the API server's
		service proxy, with your credentials; --provider-url sends the query elsewhere (a
		kubectl port-forward, or for a provider gray-controller was given by its
		--prometheus-url flag). With --dry-run the queries are printed and nothing is sent.

		The pods gate counts the revisions' pods as they are now. A webhook gate is shown by
		the body gray-controller would send; it is never called from here, since its calls are
		signed with a key only gray-controller reads.

		The exit code is 1 when a gate fails.`)

	gateTestExample = templates.Examples(`
		# Measure every gate web names, now
		kubectl gray gate test web

		# Print the error-rate gate's query for web's canary, without running it
		kubectl gray gate test web --gate error-rate --dry-run

		# Try a gate web does not name yet, through a port-forward to Prometheus
		kubectl gray gate test web --gate p99-latency --provider-url http://127.0.0.1:9090`)
)

// GateTestOptions holds what `kubectl gray gate test` needs.
type GateTestOptions struct {
	TargetOptions

	// Flags.
	Gates               []string
	DryRun              bool
	ControllerNamespace string
	ProviderURL         string
	Window              time.Duration

	// Filled in by Complete: the API server's address and an HTTP client that carries the
	// user's credentials, for its service proxy.
	APIServer *url.URL
	APIClient *http.Client
	// Direct sends the queries that do not go through the API server.
	Direct *http.Client
	Now    func() time.Time

	genericiooptions.IOStreams
}

// NewCmdGateTest returns `kubectl gray gate test`.
func NewCmdGateTest(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &GateTestOptions{ControllerNamespace: "gray-system", IOStreams: streams, Now: time.Now}
	cmd := &cobra.Command{
		Use:                   "test DEPLOYMENT [--gate NAME] [--dry-run] [--provider-url URL]",
		DisableFlagsInUseLine: true,
		Short:                 "Measure a Deployment's gates now, for its live canary",
		Long:                  gateTestLong,
		Example:               gateTestExample,
		ValidArgsFunction:     completeDeploymentNames(f),
		RunE:                  runE(f, o),
	}
	cmd.Flags().StringArrayVar(&o.Gates, "gate", nil, "Measure this gate (repeat for more); by default the gates kubegray.io/gates and kubegray.io/gates-dry-run name.")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "Print each metric gate's queries and each webhook gate's body; send nothing.")
	cmd.Flags().StringVar(&o.ControllerNamespace, "controller-namespace", o.ControllerNamespace, "gray-controller's namespace: its cluster-wide gates and its providers.")
	cmd.Flags().StringVar(&o.ProviderURL, "provider-url", "", "Send metric gates' queries to this Prometheus instead of their provider's URL.")
	cmd.Flags().DurationVar(&o.Window, "window", 0, "The window the queries cover ($window); by default the time since the hold settled.")
	return cmd
}

// Complete reads the argument, then the namespace, clients and the API server's address.
func (o *GateTestOptions) Complete(f cmdutil.Factory, args []string) error {
	if err := o.completeName("gate test", args); err != nil {
		return err
	}
	if err := o.completeClient(f); err != nil {
		return err
	}
	cfg, err := f.ToRESTConfig()
	if err != nil {
		return err
	}
	if o.APIServer, err = url.Parse(cfg.Host); err != nil {
		return fmt.Errorf("the API server's address %q: %w", cfg.Host, err)
	}
	if o.APIClient, err = rest.HTTPClientFor(cfg); err != nil {
		return err
	}
	o.Direct = &http.Client{}
	return nil
}

// Validate checks the flags.
func (o *GateTestOptions) Validate() error {
	if o.ProviderURL != "" {
		if _, err := gates.PrometheusURLProvider(o.ProviderURL); err != nil {
			return fmt.Errorf("--provider-url: %w", err)
		}
	}
	if o.Window < 0 {
		return fmt.Errorf("--window %v: give a positive duration", o.Window)
	}
	return nil
}

// errGateFailed makes the exit code 1 once every gate's outcome is printed.
var errGateFailed = errors.New("a gate failed")

// liveHold is what a measurement is for: the Deployment's current hold and its two revisions.
type liveHold struct {
	d              *appsv1.Deployment
	st             grayapi.Status
	canary, stable *appsv1.ReplicaSet
	vars           gates.QueryVars
	settledAt      time.Time
	now            time.Time
}

// Run measures the gates and prints what each found.
func (o *GateTestOptions) Run(ctx context.Context) error {
	if err := o.resolveName(); err != nil {
		return err
	}
	k, err := o.load(ctx)
	if err != nil {
		return err
	}
	names, err := o.gateNames(k.d)
	if err != nil {
		return err
	}
	failed := false
	for _, name := range names {
		outcome, err := o.testGate(ctx, k, name)
		if err != nil {
			fmt.Fprintf(o.Out, "✖ gate %s: %v\n", name, err)
			failed = true
			continue
		}
		failed = failed || outcome == grayapi.GateFail
	}
	if failed {
		return errGateFailed
	}
	return nil
}

// load reads the Deployment, its status and its canary and stable ReplicaSets.
func (o *GateTestOptions) load(ctx context.Context) (liveHold, error) {
	d, err := o.Client.AppsV1().Deployments(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return liveHold{}, apiError(err, "get", o.Namespace, o.Name)
	}
	st, err := reportedStatus(d, "measure the gates of")
	if err != nil {
		return liveHold{}, err
	}
	rss, _, err := ownedReplicaSets(ctx, o.Client, d)
	if err != nil {
		return liveHold{}, err
	}
	k := liveHold{d: d, st: st, canary: atRevision(rss, st.Revision), stable: atRevision(rss, st.StableRevision), now: o.Now()}
	obj := fmt.Sprintf("deployment %s/%s", d.Namespace, d.Name)
	if k.canary == nil || k.stable == nil || k.canary == k.stable {
		return liveHold{}, fmt.Errorf("%s has no canary to measure: revision %d (stable %d), phase %s; its gates measure a hold of a new revision",
			obj, st.Revision, st.StableRevision, st.Phase)
	}
	k.vars = gates.QueryVars{Namespace: d.Namespace, Deployment: d.Name, CanaryHash: hashOf(k.canary), StableHash: hashOf(k.stable), Window: o.Window}
	if st.SettledAt != nil {
		k.settledAt = st.SettledAt.Time
		if o.Window == 0 {
			k.vars.Window = k.now.Sub(k.settledAt)
		}
	} else if o.Window == 0 {
		return liveHold{}, fmt.Errorf("%s has not settled a hold (phase %s), so its gates have no window yet: give one with --window", obj, st.Phase)
	}
	return k, nil
}

// gateNames are the gates to measure: --gate, or those the Deployment names.
func (o *GateTestOptions) gateNames(d *appsv1.Deployment) ([]string, error) {
	if len(o.Gates) > 0 {
		return o.Gates, nil
	}
	policy, err := grayapi.ParsePolicy(d.Annotations)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	names := slices.Clone(policy.Gates)
	for _, name := range policy.DryRunGates {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("deployment %s/%s names no gates (%s); name one to try with --gate", d.Namespace, d.Name, grayapi.GatesAnnotation)
	}
	return names, nil
}

// testGate measures one gate and prints its outcome.
func (o *GateTestOptions) testGate(ctx context.Context, k liveHold, name string) (grayapi.GateOutcome, error) {
	def, err := o.definition(ctx, k.d.Namespace, name)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(o.Out, "gate %s: %s gate, provider %s (%s)\n", def.Name, def.Kind, def.Provider, def.Source)
	var outcome grayapi.GateOutcome
	var value, why string
	switch def.Kind {
	case gates.KindPods:
		canaryPods, stablePods, err := o.revisionPods(ctx, k)
		if err != nil {
			return "", err
		}
		var base grayapi.PodsBaseline
		if i := slices.IndexFunc(k.st.Gates, func(g grayapi.GateStatus) bool { return g.Name == name && g.Baseline != nil }); i >= 0 {
			base = *k.st.Gates[i].Baseline
		}
		outcome, value, why = def.Judge(gates.CountPods(canaryPods, k.settledAt, base.Canary), gates.CountPods(stablePods, k.settledAt, base.Stable))
	case gates.KindWebhook:
		body, err := json.MarshalIndent(gates.WebhookCall{Gate: def.Name, Namespace: k.d.Namespace, Name: k.d.Name, UID: string(k.d.UID),
			Revision: k.st.Revision, StableRevision: k.st.StableRevision, Step: k.st.Step, Percent: k.st.Percent,
			CanaryHash: k.vars.CanaryHash, StableHash: k.vars.StableHash, SettledAt: k.settledAt, SentAt: k.now}, "  ", "  ")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(o.Out, "  body:    %s\n  not called: a webhook gate's calls are signed with a key only gray-controller reads\n", body)
		return "", nil
	default:
		if outcome, value, why, err = o.query(ctx, k, def); err != nil {
			return "", err
		}
	}
	if o.DryRun {
		// The queries are printed; the pods were counted, which sends nothing, but not judged.
		if def.Kind == gates.KindPods {
			fmt.Fprintf(o.Out, "  counts:  %s\n", value)
		}
		return "", nil
	}
	if value != "" {
		fmt.Fprintf(o.Out, "  value:   %s\n", value)
	}
	fmt.Fprintf(o.Out, "  outcome: %s: %s\n", outcome, why)
	return outcome, nil
}

// query renders a metric gate's query (once per revision when compared), prints it, and unless
// --dry-run runs it and judges what it returned.
func (o *GateTestOptions) query(ctx context.Context, k liveHold, def *gates.Definition) (grayapi.GateOutcome, string, string, error) {
	provider, client, err := o.providerFor(ctx, k.d.Namespace, def)
	if err != nil {
		return "", "", "", err
	}
	runs := []struct{ name, hash string }{{"result", ""}}
	if def.Compare {
		runs = []struct{ name, hash string }{{"canary", k.vars.CanaryHash}, {"stable", k.vars.StableHash}}
	}
	fmt.Fprintf(o.Out, "  to:      %s (window %s, since %s)\n", provider.URL.Redacted(), k.vars.Window.Truncate(time.Second), k.now.Add(-k.vars.Window).UTC().Format(time.RFC3339))
	var readings []gates.Reading
	for _, run := range runs {
		query, err := def.Render(k.vars, run.hash, provider.NamespaceLabel)
		if err != nil {
			return "", "", "", err
		}
		fmt.Fprintf(o.Out, "  query (%s): %s\n", run.name, query)
		if !o.DryRun {
			qctx, cancel := context.WithTimeout(ctx, provider.Timeout)
			readings = append(readings, promquery.Query(qctx, client, provider, query, k.now))
			cancel()
		}
	}
	if o.DryRun {
		return "", "", "", nil
	}
	outcome, value, why := def.JudgeMetric(readings...)
	return outcome, value, why, nil
}
