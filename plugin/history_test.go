package plugin

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// rolledBackWeb went 1 (nginx:1.26) → 2 (nginx:1.27, held) → undo, which
// turned revision 1's ReplicaSet into revision 3.
func rolledBackWeb(t *testing.T) []runtime.Object {
	d := deployment("web", testutil.WithRevision(3), testutil.WithGeneration(6, 6),
		withGray(t, "10,30,60", &grayapi.Status{Revision: 3, StableRevision: 3, Step: 3, Percent: 100, Target: 10, Phase: grayapi.PhaseComplete, ObservedGeneration: 6}))
	stable := replicaSet(d, "3", "5f7d8c6b9", "nginx:1.26", 10, 10, 72*time.Hour)
	stable.Annotations["deployment.kubernetes.io/revision-history"] = "1"
	stable.Annotations["kubernetes.io/change-cause"] = "initial release"
	canary := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 0, 0, 3*time.Hour)
	return []runtime.Object{d, stable, canary}
}

// supersededWeb: stable 1, revision 2 replaced while held by revision 3,
// which is held at 10%.
func supersededWeb(t *testing.T) []runtime.Object {
	d := deployment("web", testutil.WithImage("nginx:1.28"), testutil.WithRevision(3), testutil.WithGeneration(8, 8), testutil.WithPaused(),
		withGray(t, "10,50", &grayapi.Status{Revision: 3, StableRevision: 1, Percent: 10, Target: 1, Phase: grayapi.PhaseHeld, ObservedGeneration: 8, HeldAt: heldAt(time.Minute)}))
	return []runtime.Object{d,
		replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 9, 9, 72*time.Hour),
		replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 0, 0, 2*time.Hour),
		replicaSet(d, "3", "6b8f7d9c5", "nginx:1.28", 1, 1, 10*time.Minute),
	}
}

// abortedThenSupersededWeb: revision 2 was aborted (its ReplicaSet keeps the
// kubegray.io/aborted record), revision 3 is aborted now, and the stable
// revision 1's ReplicaSet carries a label that names no revision of its own.
func abortedThenSupersededWeb(t *testing.T) []runtime.Object {
	d := deployment("web", testutil.WithImage("nginx:1.28"), testutil.WithRevision(3), testutil.WithGeneration(8, 8),
		withGray(t, "10,50", &grayapi.Status{Revision: 3, StableRevision: 1, Percent: 10, Target: 1, Phase: grayapi.PhaseAborted, ObservedGeneration: 8}))
	stable := replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, 72*time.Hour)
	stable.Labels[grayapi.AbortedLabel] = "0"
	first := replicaSet(d, "2", "7c9d5f8b6", "nginx:1.27", 0, 0, 2*time.Hour)
	first.Labels[grayapi.AbortedLabel] = "2"
	current := replicaSet(d, "3", "6b8f7d9c5", "nginx:1.28", 0, 0, 10*time.Minute)
	current.Labels[grayapi.AbortedLabel] = "3"
	return []runtime.Object{d, stable, first, current}
}

func historyRun(cs *fake.Clientset, args []string, output string) (string, error) {
	streams, out, _ := testStreams()
	o := NewHistoryOptions(streams)
	o.Now, o.Namespace, o.Client, *o.PrintFlags.OutputFormat = clock, ns, cs, output
	o.Getter = testNames()
	err := o.complete(args)
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return out.String(), err
}

func TestHistory(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		output  string
	}{
		{name: "rolled-back", objects: rolledBackWeb},
		{name: "aborted", objects: abortedThenSupersededWeb},
		{name: "superseded", objects: supersededWeb},
		{name: "superseded-json", objects: supersededWeb, output: "json"},
		{name: "no-gray", objects: func(t *testing.T) []runtime.Object {
			d := deployment("web")
			return []runtime.Object{d, replicaSet(d, "1", "5f7d8c6b9", "nginx:1.26", 10, 10, time.Hour)}
		}},
		{name: "empty", objects: func(t *testing.T) []runtime.Object { return []runtime.Object{deployment("web")} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := historyRun(fake.NewClientset(tt.objects(t)...), []string{"web"}, tt.output)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, "history", tt.name, out)
		})
	}
}

func TestHistoryMarks(t *testing.T) {
	tests := []struct {
		name    string
		objects func(t *testing.T) []runtime.Object
		want    map[int64]string
	}{
		{name: "rolled back", objects: rolledBackWeb, want: map[int64]string{2: "rolled back", 3: "current, complete, stable"}},
		{name: "superseded while held", objects: supersededWeb, want: map[int64]string{1: "stable", 2: "abandoned", 3: "current, held at 10%"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(tt.objects(t)...)
			d := getDeployment(t, cs, "web")
			rss, _, err := ownedReplicaSets(context.Background(), cs, d)
			if err != nil {
				t.Fatal(err)
			}
			got := map[int64]string{}
			for _, r := range newHistoryView(d, rss).Revisions {
				got[r.Revision] = strings.Join(r.Marks, ", ")
			}
			for rev, want := range tt.want {
				if got[rev] != want {
					t.Errorf("revision %d marks %q, want %q", rev, got[rev], want)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("revisions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryErrors(t *testing.T) {
	for _, tt := range []struct {
		name, output, wantErr string
		args                  []string
	}{
		{name: "not found", args: []string{"nope"}, wantErr: "deployment default/nope not found"},
		{name: "bad output", args: []string{"web"}, output: "xml", wantErr: `invalid -o "xml": use one of `},
		{name: "no name", wantErr: "give one Deployment, e.g. 'kubectl gray history web'"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := historyRun(fake.NewClientset(deployment("web")), tt.args, tt.output)
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one starting %q", err, tt.wantErr)
			}
		})
	}
}
