package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var (
	gateLintLong = templates.LongDesc(`
		Check gate definitions and providers offline, as gray-controller reads them: the
		ConfigMaps labelled kubegray.io/gates=true (definitions: the YAML, the CEL conditions,
		the PromQL and its variables, no URL) and kubegray.io/gates=providers (providers) in
		the files given. A definition naming a provider defined in the files is checked
		against it too. It does not contact the cluster. See docs/gates.md.`)

	gateLintExample = templates.Examples(`
		# Check the gates of an app before committing them
		kubectl gray gate lint -f deploy/gates.yaml

		# Check definitions against the cluster admin's providers
		kubectl gray gate lint -f deploy/gates.yaml -f platform/gate-providers.yaml`)
)

// NewCmdGate returns `kubectl gray gate`, the verbs about gates.
func NewCmdGate(f cmdutil.Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gate",
		Short: "Check gate definitions and measure gates (kubegray.io/gates)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(NewCmdGateLint(streams), NewCmdGateTest(f, streams))
	return cmd
}

// GateLintOptions holds what `kubectl gray gate lint` needs.
type GateLintOptions struct {
	Files []string
	genericiooptions.IOStreams
}

// NewCmdGateLint returns `kubectl gray gate lint`. It needs no cluster, hence no factory.
func NewCmdGateLint(streams genericiooptions.IOStreams) *cobra.Command {
	o := &GateLintOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:                   "lint -f FILE [-f FILE...]",
		DisableFlagsInUseLine: true,
		Short:                 "Check gate definitions and providers offline",
		Long:                  gateLintLong,
		Example:               gateLintExample,
		Args:                  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(o.Files) == 0 {
				return errors.New("name the files to check with -f (- reads standard input)")
			}
			return o.Run(commandContext(cmd))
		},
	}
	cmd.Flags().StringArrayVarP(&o.Files, "filename", "f", nil, "A YAML file of ConfigMaps (- for standard input); repeat for more.")
	return cmd
}

// labelledConfigMap is one ConfigMap of the files, and where it was found.
type labelledConfigMap struct {
	cm     corev1.ConfigMap
	source string
}

// Run reads the files, checks every definition and provider, prints a line for each, and
// fails when any is refused.
func (o *GateLintOptions) Run(_ context.Context) error {
	var definitions, providers []labelledConfigMap
	for _, file := range o.Files {
		cms, err := o.readConfigMaps(file)
		if err != nil {
			return err
		}
		for _, c := range cms {
			switch c.cm.Labels[grayapi.GatesLabel] {
			case grayapi.GatesLabelValue:
				definitions = append(definitions, c)
			case grayapi.ProvidersLabelValue:
				providers = append(providers, c)
			}
		}
	}
	if len(definitions)+len(providers) == 0 {
		return fmt.Errorf("no ConfigMap labelled %s=%s or %s=%s in %s", grayapi.GatesLabel, grayapi.GatesLabelValue,
			grayapi.GatesLabel, grayapi.ProvidersLabelValue, strings.Join(o.Files, ", "))
	}
	known := map[string]*gates.Provider{}
	checked, refused := 0, 0
	report := func(what string, err error) {
		checked++
		if err != nil {
			refused++
			fmt.Fprintf(o.Out, "✖ %v\n", err)
			return
		}
		fmt.Fprintf(o.Out, "✔ %s\n", what)
	}
	for _, c := range providers {
		for _, name := range slices.Sorted(maps.Keys(c.cm.Data)) {
			p, err := gates.ParseProvider(name, c.source+", key "+name, c.cm.Data[name])
			what := ""
			if err == nil {
				known[name], what = p, fmt.Sprintf("provider %s (%s, %s)", name, c.source, p.Type)
			}
			report(what, err)
		}
	}
	for _, c := range definitions {
		for _, name := range slices.Sorted(maps.Keys(c.cm.Data)) {
			source := c.source + ", key " + name
			def, err := gates.Parse(name, source, c.cm.Data[name])
			if err == nil {
				err = checkAgainst(def, known[def.Provider])
			}
			report(describeGate(def, known), err)
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d of %d refused", refused, checked)
	}
	return nil
}

// readConfigMaps reads the ConfigMaps of a YAML file (- is standard input); other kinds are
// left out.
func (o *GateLintOptions) readConfigMaps(file string) ([]labelledConfigMap, error) {
	in := o.In
	if file != "-" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		in = bytes.NewReader(data)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	var out []labelledConfigMap
	for i := 1; ; i++ {
		var cm corev1.ConfigMap
		if err := decoder.Decode(&cm); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", file, i, err)
		}
		if cm.Kind == "ConfigMap" {
			out = append(out, labelledConfigMap{cm: cm, source: fmt.Sprintf("%s: ConfigMap %s", file, cm.Name)})
		}
	}
}

// checkAgainst checks def against the provider of its name found in the files (nil: not there,
// nothing to check against).
func checkAgainst(def *gates.Definition, p *gates.Provider) error {
	if p == nil {
		return nil
	}
	if err := def.CheckProvider(p); err != nil {
		return fmt.Errorf("gate %q (%s): %w", def.Name, def.Source, err)
	}
	return nil
}

// describeGate is the line for a definition that passed.
func describeGate(def *gates.Definition, known map[string]*gates.Provider) string {
	if def == nil {
		return ""
	}
	where := ""
	if _, ok := known[def.Provider]; !ok && def.Kind != gates.KindPods {
		where = ", not among the files' providers: gray-controller must have it"
	}
	return fmt.Sprintf("gate %s (%s, %s gate, provider %s%s)", def.Name, def.Source, def.Kind, def.Provider, where)
}
