package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// progressWidth is the number of cells of the progress bar.
const progressWidth = 20

// maxPodsShown bounds the pods listed per ReplicaSet in the tree; -o json
// lists them all.
const maxPodsShown = 10

// palette paints text with ANSI colours when enabled; disabled, it returns
// text unchanged, so golden files and pipes see plain text.
type palette bool

func (p palette) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string { return p.paint("1", s) }
func (p palette) dim(s string) string  { return p.paint("2", s) }

// phase colours a phase by what it asks of the reader: red needs action,
// yellow waits for a decision, green is done. Aborted is red although the
// stable revision serves again: the failure stays until somebody retries,
// changes the template or undoes.
func (p palette) phase(ph grayapi.Phase) string {
	s := string(ph)
	switch ph {
	case grayapi.PhaseDegraded, grayapi.PhaseInvalid, grayapi.PhaseAborted:
		return p.paint("31", s)
	case grayapi.PhaseHeld:
		return p.paint("33", s)
	case grayapi.PhaseComplete:
		return p.paint("32", s)
	case grayapi.PhaseProgressing, grayapi.PhaseRolledBack:
		return p.paint("36", s)
	}
	return s
}

func (p palette) ready(ready bool) string {
	if ready {
		return p.paint("32", "ready")
	}
	return p.paint("31", "not ready")
}

// progressBar draws done out of total in width cells, e.g. done 3, total 4,
// width 8 → "[######--]". A total of 0 (a hold at 0%) is reached at once.
func progressBar(done, total int32, width int) string {
	filled := width
	if total > 0 {
		d := min(max(done, 0), total)
		filled = int(int64(d) * int64(width) / int64(total))
	}
	return "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "]"
}

// age renders how long ago t was, like kubectl's AGE column.
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// formatHoldPoints renders hold points the human way, each with its own duration where it names
// one: "10%, 30%, 60%", or "10% for 5m, 50%" for "10@5m,50". Where the value is the annotation's
// (written back by set, or the status table's HOLD-POINTS column) grayapi.FormatHoldPoints gives
// "10@5m,50" instead.
func formatHoldPoints(points grayapi.HoldPoints) string {
	s := make([]string, len(points.Percents))
	for i, p := range points.Percents {
		s[i] = fmt.Sprintf("%d%%", p)
		if d := points.HoldForAt(i); d > 0 {
			s[i] += " for " + grayapi.FormatHoldFor(d)
		}
	}
	return strings.Join(s, ", ")
}

// stepText renders where a rollout stands among its hold points.
func stepText(v StatusView) string {
	if v.Steps == 0 || v.Phase == "" {
		return "-"
	}
	if v.Step >= v.Steps {
		return fmt.Sprintf("%d/%d+", v.Steps, v.Steps)
	}
	return fmt.Sprintf("%d/%d", v.Step+1, v.Steps)
}

// renderStatus writes the summary and the tree of one Deployment.
func renderStatus(w io.Writer, v StatusView, now time.Time, color bool) error {
	p := palette(color)
	var b strings.Builder
	line := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "%-13s%s\n", label+":", fmt.Sprintf(format, args...))
	}

	line("Name", "%s", p.bold(v.Name))
	line("Namespace", "%s", v.Namespace)
	mode := string(v.Mode)
	if v.Takeover != "" {
		mode += " (--takeover=" + v.Takeover + ")"
	}
	switch {
	case v.TakenOver && v.Takeover == string(grayapi.TakeoverEager):
		line("Mode", "%s, taken over while annotated: paused on strategy Recreate (strategy %s saved)", mode, v.SavedStrategy)
	case v.TakenOver:
		line("Mode", "%s, taken over: paused on strategy Recreate until the rollout ends (strategy %s saved)", mode, v.SavedStrategy)
	case v.Takeover == string(grayapi.TakeoverAdmission):
		line("Mode", "%s, not taken over: the kubegray-takeover policy or 'kubectl gray set --image' takes the next template change over", mode)
	case v.Mode == grayapi.ModeAlongside:
		line("Mode", "%s, not taken over", mode)
	case v.Mode != "":
		line("Mode", "%s", mode)
	}
	switch {
	case !v.Gray:
		line("Hold points", "none: not a gray Deployment (start with 'kubectl gray set %s PERCENT')", v.Name)
	case len(v.HoldPoints) == 0:
		line("Hold points", "invalid %s", grayapi.QuoteValue(v.PercentAnnotation))
	case v.Phase == "":
		line("Hold points", "%s", formatHoldPoints(v.holdPoints()))
	case v.Phase == grayapi.PhaseComplete:
		line("Hold points", "%s (rollout complete)", formatHoldPoints(v.holdPoints()))
	case v.Phase == grayapi.PhaseAborted && v.Step < v.Steps:
		line("Hold points", "%s (aborted at step %d of %d)", formatHoldPoints(v.holdPoints()), v.Step+1, v.Steps)
	case v.Phase == grayapi.PhaseAborted:
		line("Hold points", "%s (aborted past the last one)", formatHoldPoints(v.holdPoints()))
	case v.Step >= v.Steps:
		line("Hold points", "%s (past the last one, rolling to 100%%)", formatHoldPoints(v.holdPoints()))
	default:
		line("Hold points", "%s (step %d of %d)", formatHoldPoints(v.holdPoints()), v.Step+1, v.Steps)
	}
	if v.Policy != nil {
		line("On failure", "%s", onFailureText(v.Policy, v.Message))
		line("Hold for", "%s", holdForText(v.Policy, v.Message, v.HoldPointDurations != nil, now))
	}
	switch {
	case v.Phase == "" && v.Gray:
		line("Phase", "Pending (gray-controller has not reported yet)")
	case v.Phase == "":
		line("Phase", "-")
	case v.HeldAt != nil && v.Phase == grayapi.PhaseHeld:
		line("Phase", "%s at %d%% for %s (since %s)", p.phase(v.Phase), v.Percent, age(now, *v.HeldAt), v.HeldAt.UTC().Format(time.RFC3339))
	case v.Phase == grayapi.PhaseAborted:
		line("Phase", "%s (%s)", p.phase(v.Phase), abortedPhaseText(v))
	default:
		line("Phase", "%s", p.phase(v.Phase))
	}
	if v.Message != "" {
		line("Message", "%s", v.Message)
	}
	if v.Failure != nil {
		line("Failure", "%s", failureText(v))
		switch {
		case v.Phase == grayapi.PhaseAborted:
			fmt.Fprintf(&b, "%13s%s\n", "", abortedText(v))
		case v.Failure.RolledBackFrom > 0:
			fmt.Fprintf(&b, "%13s%s\n", "", rolledBackText(v.Failure))
		}
	}
	for _, g := range v.Gates {
		line("Gate "+g.Name, "%s", gateText(g, now))
	}
	switch {
	case v.Serves != nil:
		line("Serves", "%s", v.Serves)
	case v.Phase != "":
		line("Serves", "not listed: gray-controller is older than this plugin; upgrade it")
	}
	if v.Phase == grayapi.PhaseAborted {
		line("Next step", "%s", againHint(v.Name))
	}
	// An Invalid rollout has no target: it is stopped where it is. Nor has an
	// Aborted one: its canary is at 0 whatever the hold point says.
	if v.Phase != "" && v.Phase != grayapi.PhaseInvalid && v.Phase != grayapi.PhaseAborted && v.NewAvailableReplicas != nil {
		available := *v.NewAvailableReplicas
		line("Target", "%s %d/%d new replicas available (%d%% of %d)",
			progressBar(available, v.Target, progressWidth), available, v.Target, v.Percent, v.Replicas)
	}
	line("Replicas", "%d desired, %d current, %d updated, %d ready, %d available",
		v.Replicas, v.CurrentReplicas, v.UpdatedReplicas, v.ReadyReplicas, v.AvailableReplicas)
	revs := fmt.Sprintf("%d (current)", v.Revision)
	if v.StableRevision > 0 {
		revs += fmt.Sprintf(", %d (stable)", v.StableRevision)
	}
	line("Revisions", "%s", revs)
	line("Images", "%s", formatImages(v.Images))
	if v.Paused && !v.TakenOver {
		line("Paused", "yes")
	}
	for i, note := range append(append([]string{}, v.StaleReasons...), v.Warnings...) {
		if i == 0 {
			line("Notes", "%s", note)
		} else {
			fmt.Fprintf(&b, "%13s%s\n", "", note)
		}
	}

	if v.NotReady != nil {
		renderNotReady(&b, v.NotReady)
	}
	if len(v.Conditions) > 0 {
		b.WriteString("Conditions:\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tMESSAGE")
		for _, c := range v.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		// Writes into a strings.Builder cannot fail.
		_ = tw.Flush()
	}
	if len(v.Events) > 0 {
		b.WriteString("Gray events:\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "  AGE\tTYPE\tREASON\tMESSAGE")
		for _, e := range v.Events {
			when := "<unknown>"
			if e.LastSeen != nil {
				when = age(now, *e.LastSeen)
			}
			reason := e.Reason
			if e.Count > 1 {
				reason = fmt.Sprintf("%s (x%d)", e.Reason, e.Count)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", when, e.Type, reason, e.Message)
		}
		_ = tw.Flush()
	}

	if v.Revisions != nil {
		b.WriteString("\n")
		renderTree(&b, v, now, p)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderTree draws Deployment → revision → ReplicaSet → pods.
func renderTree(b *strings.Builder, v StatusView, now time.Time, p palette) {
	b.WriteString(p.bold(deploymentRef(v.Name)) + "\n")
	if len(v.Revisions) == 0 {
		b.WriteString("└── (no ReplicaSets yet)\n")
	}
	for i, r := range v.Revisions {
		branch, indent := "├── ", "│   "
		if i == len(v.Revisions)-1 {
			branch, indent = "└── ", "    "
		}
		var roles []string
		if r.New {
			roles = append(roles, "new")
		}
		if r.Stable {
			roles = append(roles, "stable")
		}
		if r.Aborted {
			roles = append(roles, "aborted")
		}
		label := fmt.Sprintf("revision %d", r.Revision)
		if len(roles) > 0 {
			label += " (" + strings.Join(roles, ", ") + ")"
		}
		fmt.Fprintf(b, "%s%s  replicaset.apps/%s  %d/%d ready  %s\n", branch, p.bold(label), r.ReplicaSet, r.ReadyReplicas, r.Replicas, formatImages(r.Images))
		shown := r.Pods
		if len(shown) > maxPodsShown {
			shown = shown[:maxPodsShown]
		}
		for j, pod := range shown {
			pb := "├── "
			if j == len(shown)-1 && len(r.Pods) == len(shown) {
				pb = "└── "
			}
			fmt.Fprintf(b, "%s%spod/%s  %s  %d/%d %s  %s  %s\n", indent, pb, pod.Name, pod.Phase,
				pod.ReadyContainers, pod.Containers, p.ready(pod.Ready), plural(pod.Restarts, "restart"), age(now, pod.CreatedAt))
		}
		if more := len(r.Pods) - len(shown); more > 0 {
			fmt.Fprintf(b, "%s└── %s\n", indent, p.dim(fmt.Sprintf("... and %d more pods", more)))
		}
	}
}

// plural renders a count with its noun: 1 restart, 2 restarts.
func plural(n int32, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// orPlaceholder is s, or placeholder when s is empty, so that an empty value
// still shows in a table column or a message: "-", "<none>", "(no message)".
func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// printData writes a view as JSON or YAML.
func printData(w io.Writer, format string, v any) error {
	var out []byte
	var err error
	switch format {
	case "json":
		out, err = json.MarshalIndent(v, "", "    ")
		out = append(out, '\n')
	case "yaml":
		out, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unknown output format %q: use json or yaml", format)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// gateText is one gate's line: its mark and last outcome, the counts and where they leave it,
// when it was last measured and is next due, why, and what it measured.
func gateText(g grayapi.GateStatus, now time.Time) string {
	mark := map[grayapi.GateOutcome]string{grayapi.GatePass: "✔", grayapi.GateFail: "✖"}[g.Last]
	if mark == "" {
		mark = "?"
	}
	last := string(g.Last)
	if last == "" {
		last = "not measured yet"
	}
	text := fmt.Sprintf("%s %s (%d passed, %d failed, %d unsure)", mark, last, g.Passes, g.Fails, g.Unsure)
	if g.Verdict != "" {
		text += " → " + string(g.Verdict)
	}
	if g.DryRun {
		text += " [dry run]"
	}
	if g.At != nil {
		text += fmt.Sprintf(", measured %s ago", age(now, metav1.NewTime(g.At.Time)))
	}
	if g.Next != nil {
		text += fmt.Sprintf(", next in %s", max(g.Next.Sub(now), 0).Round(time.Second))
	}
	if g.Why != "" {
		text += ": " + g.Why
	}
	if g.Value != "" {
		text += "; " + g.Value
	}
	return text
}
