package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestRestartBatchSize pins how many available pods a restart may take down
// at once: maxUnavailable resolved against spec.replicas rounding down (one
// when both fenceposts resolve to 0, as a rolling update allows), less the
// replicas already unavailable. Every row is worked by hand.
func TestRestartBatchSize(t *testing.T) {
	pct, n := intstr.FromString, intstr.FromInt32
	tests := []struct {
		name                 string
		replicas             int32
		maxSurge, maxUnavail intstr.IntOrString
		override             string
		unavailable          int32
		want                 int32
		wantErr              string
	}{
		{name: "25% of 10 is 2.5, down to 2", replicas: 10, maxSurge: pct("25%"), maxUnavail: pct("25%"), want: 2},
		{name: "one already unavailable leaves 1", replicas: 10, maxSurge: pct("25%"), maxUnavail: pct("25%"), unavailable: 1, want: 1},
		{name: "limit used up", replicas: 10, maxSurge: pct("25%"), maxUnavail: pct("25%"), unavailable: 2, want: 0},
		{name: "more unavailable than allowed", replicas: 10, maxSurge: pct("25%"), maxUnavail: pct("25%"), unavailable: 5, want: 0},
		{name: "39% of 10 is 3.9, down to 3", replicas: 10, maxSurge: n(1), maxUnavail: pct("39%"), want: 3},
		{name: "absolute 3", replicas: 20, maxSurge: n(0), maxUnavail: n(3), unavailable: 1, want: 2},
		{name: "absolute above the replicas is clamped", replicas: 4, maxSurge: n(0), maxUnavail: n(10), want: 4},
		{name: "25% of 3 is 0 next to a surge: refused", replicas: 3, maxSurge: pct("25%"), maxUnavail: pct("25%"),
			wantErr: "deployment default/web allows no unavailable pods (maxUnavailable 25% of 3 replicas is 0, maxSurge 25%)"},
		{name: "maxUnavailable 0: refused", replicas: 10, maxSurge: n(1), maxUnavail: n(0),
			wantErr: "deployment default/web allows no unavailable pods (maxUnavailable 0 of 10 replicas is 0, maxSurge 1)"},
		{name: "both 0 after rounding: one may go", replicas: 3, maxSurge: n(0), maxUnavail: pct("25%"), want: 1},
		{name: "override with maxUnavailable 0", replicas: 10, maxSurge: n(1), maxUnavail: n(0), override: "3", want: 3},
		{name: "override less what is unavailable", replicas: 10, maxSurge: n(1), maxUnavail: n(0), override: "3", unavailable: 2, want: 1},
		{name: "override 50% of 5 is 2.5, down to 2", replicas: 5, maxSurge: n(1), maxUnavail: n(0), override: "50%", want: 2},
		{name: "override rounding to 0", replicas: 5, maxSurge: n(1), maxUnavail: n(0), override: "10%",
			wantErr: "--max-unavailable 10% of 5 replicas rounds down to 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deployment("web", testutil.WithReplicas(tt.replicas), testutil.WithRollingUpdate(tt.maxSurge, tt.maxUnavail))
			var override *intstr.IntOrString
			if tt.override != "" {
				v := intstr.Parse(tt.override)
				override = &v
			}
			limit, _, err := restartLimit(d, override)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("restartLimit() error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := batchSize(limit, tt.replicas, tt.replicas-tt.unavailable); got != tt.want {
				t.Fatalf("batch size %d (limit %d), want %d", got, limit, tt.want)
			}
		})
	}
}

// TestRestartLimitStrategies pins where the limit is read from: a taken-over
// Deployment's saved strategy, not the takeover's Recreate; a Deployment of
// its own Recreate has none.
func TestRestartLimitStrategies(t *testing.T) {
	takenOver := deployment("web", testutil.WithRecreate(), testutil.WithPaused(),
		testutil.WithAnnotation(grayapi.StrategyAnnotation, "RollingUpdate;maxSurge=0;maxUnavailable=30%"))
	limit, source, err := restartLimit(takenOver, nil)
	if err != nil || limit != 3 || source != "maxUnavailable 30% of 10 replicas" {
		t.Errorf("taken over: limit %d (%s), error %v; want 3 from the saved 30%%", limit, source, err)
	}
	_, _, err = restartLimit(deployment("web", testutil.WithRecreate()), nil)
	if want := "deployment default/web uses the Recreate strategy, which has no maxUnavailable to restart within; give --max-unavailable N"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Recreate: error %v, want %q", err, want)
	}
	one := intstr.FromInt32(1)
	if limit, _, err := restartLimit(deployment("web", testutil.WithRecreate()), &one); err != nil || limit != 1 {
		t.Errorf("Recreate with --max-unavailable 1: limit %d, error %v", limit, err)
	}
	if limit, _, err := restartLimit(deployment("web"), nil); err != nil || limit != 2 {
		t.Errorf("no strategy written (the API's default 25%%): limit %d, error %v; want 2", limit, err)
	}
}

// restartHeldWeb is web held at 20% of 10: canary revision 2 with 2 pods, stable
// revision 1 with 8.
func restartHeldWeb(t *testing.T) (*appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.ReplicaSet) {
	d := deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", heldStatus(0, 20)))
	stable := replicaSet(d, "1", "5f4", "nginx:1.26", 8, 8, 48*time.Hour)
	stable.Labels[grayapi.StableLabel] = grayapi.StableLabelValue
	canary := replicaSet(d, "2", "7c9", "nginx:1.27", 2, 2, time.Hour)
	return d, canary, stable
}

func TestRestartTargets(t *testing.T) {
	d, canary, stable := restartHeldWeb(t)
	older := replicaSet(d, "0", "111", "nginx:1.25", 1, 1, 72*time.Hour)
	resized := func(rs *appsv1.ReplicaSet, n int32) *appsv1.ReplicaSet {
		rs = rs.DeepCopy()
		rs.Spec.Replicas = &n
		return rs
	}
	stableOf9 := resized(stable, 9)
	scaled := d.DeepCopy()
	scaled.Generation = 5
	complete := deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", withPhase(grayapi.PhaseComplete)))
	finished := deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", withPhase(grayapi.PhaseProgressing)))
	stableAtZero := resized(stable, 0)
	stableAtZero.Status = appsv1.ReplicaSetStatus{}
	plain := deployment("web")
	lone := replicaSet(plain, "3", "abc", "nginx:1.26", 10, 10, time.Hour)
	zero := replicaSet(plain, "2", "def", "nginx:1.25", 0, 0, 2*time.Hour)
	draining := zero.DeepCopy()
	draining.Status.Replicas = 2
	unobserved := deployment("web", testutil.WithGeneration(5, 4))
	invalid := withPhase(grayapi.PhaseInvalid)
	invalid.Message = `invalid kubegray.io/percent "abc"`
	wait := "wait for the hold ('kubectl gray status web --until held') or the end of the rollout ('kubectl gray status web --until complete'), then restart"
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		rss       []*appsv1.ReplicaSet
		want      []string
		wantStand string
		wantErr   string
	}{
		{name: "held: canary first, then stable", d: d, rss: []*appsv1.ReplicaSet{stable, canary},
			want: []string{"web-7c9 canary", "web-5f4 stable"}, wantStand: "held at 20%, revision 2"},
		{name: "held with another old ReplicaSet: it goes last", d: d, rss: []*appsv1.ReplicaSet{older, resized(stable, 7), canary},
			want: []string{"web-7c9 canary", "web-5f4 stable", "web-111 old"}},
		{name: "settled plain Deployment", d: plain, rss: []*appsv1.ReplicaSet{zero, lone},
			want: []string{"web-abc "}, wantStand: "settled on revision 3"},
		{name: "complete gray Deployment", d: complete, rss: []*appsv1.ReplicaSet{replicaSet(complete, "2", "7c9", "nginx:1.27", 10, 10, time.Hour)},
			want: []string{"web-7c9 "}},
		// A finished rollout whose pods are not all available (a restart's own evictions among
		// them) reports Progressing at 100%, as kubectl rollout status waits for them: one
		// ReplicaSet of the Deployment's template with all the replicas is settled.
		{name: "finished, some pods unavailable", d: finished, rss: []*appsv1.ReplicaSet{stableAtZero, replicaSet(finished, "2", "7c9", "nginx:1.26", 10, 7, time.Hour)},
			want: []string{"web-7c9 "}, wantStand: "settled on revision 2"},
		{name: "progressing from one ReplicaSet of an older template", d: finished, rss: []*appsv1.ReplicaSet{replicaSet(finished, "1", "5f4", "nginx:1.25", 10, 10, time.Hour)},
			wantErr: "deployment default/web is not held (phase Progressing): a rollout step is moving"},
		{name: "mid-step, not held", d: deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", withPhase(grayapi.PhaseProgressing))), rss: []*appsv1.ReplicaSet{stable, canary},
			wantErr: "deployment default/web is not held (phase Progressing): a rollout step is moving and takes pods down within the same maxUnavailable as a restart would, so the two would overrun it; " + wait},
		{name: "two ReplicaSets with pods, not gray", d: plain, rss: []*appsv1.ReplicaSet{stable, canary},
			wantErr: "deployment default/web is in the middle of a rollout and not held: 2 ReplicaSets have pods (web-5f4 8, web-7c9 2), and the rollout takes pods down within the same maxUnavailable as a restart would; " + wait},
		{name: "degraded", d: deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", withPhase(grayapi.PhaseDegraded))), rss: []*appsv1.ReplicaSet{stable, canary},
			wantErr: "deployment default/web is Degraded: its canary's pods are not all available"},
		{name: "invalid mid-step", d: deployment("web", testutil.WithGeneration(4, 4), withGray(t, "20", invalid)), rss: []*appsv1.ReplicaSet{stable, canary},
			wantErr: "deployment default/web is Invalid (invalid kubegray.io/percent \"abc\"): its rollout is stopped between two ReplicaSets without a hold, and a scale still moves them; fix it with 'kubectl gray set web PERCENT', then wait for the hold"},
		{name: "held, then scaled", d: scaled, rss: []*appsv1.ReplicaSet{stable, canary},
			wantErr: "deployment default/web changed since gray-controller reported its hold (generation 5, reported 4)"},
		{name: "held, sizes moving", d: d, rss: []*appsv1.ReplicaSet{stableOf9, canary},
			wantErr: "deployment default/web is held but its ReplicaSets have 11 replicas for 10 wanted (web-5f4 9, web-7c9 2)"},
		{name: "no gray status yet", d: deployment("web", withGray(t, "20", nil)), rss: []*appsv1.ReplicaSet{lone},
			wantErr: "deployment default/web has no gray status yet"},
		{name: "not observed by its controller", d: unobserved, rss: []*appsv1.ReplicaSet{lone},
			wantErr: "deployment default/web changed (generation 5) and its controller has not acted on it yet (observed 4)"},
		{name: "old pods still going", d: plain, rss: []*appsv1.ReplicaSet{lone, draining},
			wantErr: "deployment default/web is still scaling down replicaset web-def (2 pods left)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets, stand, err := restartTargets(tt.d, tt.rss)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("restartTargets() error %v, want one starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, target := range targets {
				got = append(got, target.Name+" "+target.Role)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("targets %q, want %q", got, tt.want)
			}
			if tt.wantStand != "" && stand != tt.wantStand {
				t.Errorf("stands %q, want %q", stand, tt.wantStand)
			}
		})
	}
}

// TestNextBatch pins which pods go next: the first ReplicaSet in order with
// pods left, its unavailable pods always (they take nothing more down), its
// available ones within the limit.
func TestNextBatch(t *testing.T) {
	canary, stable := restartTarget{Name: "c", UID: "c"}, restartTarget{Name: "s", UID: "s"}
	targets := []restartTarget{canary, stable}
	pods := func(rs types.UID, prefix string, available ...bool) []restartPod {
		var out []restartPod
		for i, a := range available {
			name := fmt.Sprintf("%s%d", prefix, i)
			out = append(out, restartPod{Name: name, UID: types.UID(name), ReplicaSet: rs, Available: a})
		}
		return out
	}
	all := func(ps ...[]restartPod) map[types.UID]bool {
		m := map[types.UID]bool{}
		for _, p := range slices.Concat(ps...) {
			m[p.UID] = true
		}
		return m
	}
	names := func(ps []restartPod) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Name)
		}
		return strings.Join(s, ",")
	}
	c2, s8 := pods("c", "c", true, true), pods("s", "s", true, true, true, true, true, true, true, true)
	sBroken := pods("s", "s", false, true, true, true, true, true, true, true)
	cBroken := pods("c", "c", false, true)
	tests := []struct {
		name      string
		pods      []restartPod
		originals map[types.UID]bool
		gone      map[types.UID]bool
		replicas  int32
		limit     int32
		wantRS    string
		want      string
	}{
		{name: "canary first, within the limit", pods: slices.Concat(c2, s8), originals: all(c2, s8), replicas: 10, limit: 2, wantRS: "c", want: "c0,c1"},
		{name: "limit 1", pods: slices.Concat(c2, s8), originals: all(c2, s8), replicas: 10, limit: 1, wantRS: "c", want: "c0"},
		{name: "canary done: stable", pods: s8, originals: all(s8), replicas: 8, limit: 2, wantRS: "s", want: "s0,s1"},
		{name: "a not-ready stable pod goes with one available", pods: sBroken, originals: all(sBroken), replicas: 8, limit: 2, wantRS: "s", want: "s0,s1"},
		{name: "a not-ready canary pod alone when it uses the limit", pods: slices.Concat(cBroken, s8), originals: all(cBroken, s8), replicas: 10, limit: 1, wantRS: "c", want: "c0"},
		{name: "replacements not available yet: nothing", pods: slices.Concat(pods("c", "new", false, false), s8), originals: all(s8), replicas: 10, limit: 2, want: ""},
		{name: "evicted pods still listed are not picked again", pods: slices.Concat(c2, s8), originals: all(c2, s8), gone: all(c2), replicas: 10, limit: 2, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gone := tt.gone
			if gone == nil {
				gone = map[types.UID]bool{}
			}
			s := restartState{Replicas: tt.replicas, Pods: tt.pods}
			rs, batch := nextBatch(targets, s, tt.limit, tt.originals, gone)
			if got := names(batch); got != tt.want || rs.Name != tt.wantRS {
				t.Fatalf("nextBatch() = %s [%s], want %s [%s]", rs.Name, got, tt.wantRS, tt.want)
			}
		})
	}
}

// TestPlanBatches pins the dry run's batches: each batch's replacements
// counted available before the next, as the restart waits for them.
func TestPlanBatches(t *testing.T) {
	_, canary, stable := restartHeldWeb(t)
	targets := heldTargets([]*appsv1.ReplicaSet{stable, canary}, 2)
	var s restartState
	s.Replicas = 10
	originals := map[types.UID]bool{}
	for i, rs := range []*appsv1.ReplicaSet{canary, stable} {
		for j := range *rs.Spec.Replicas {
			name := fmt.Sprintf("%s-%d", rs.Name, j)
			s.Pods = append(s.Pods, restartPod{Name: name, UID: types.UID(name), ReplicaSet: rs.UID, Available: i+int(j) != 3})
			originals[types.UID(name)] = true
		}
	}
	var got []string
	for _, b := range planBatches(targets, s, 2, originals) {
		var names []string
		for _, p := range b {
			names = append(names, p.Name)
		}
		got = append(got, strings.Join(names, " "))
	}
	// web-5f4-2 is not ready: with 1 of 10 unavailable only one canary pod
	// goes first; the not-ready stable pod goes with one more.
	want := []string{"web-7c9-0", "web-7c9-1", "web-5f4-2 web-5f4-0", "web-5f4-1 web-5f4-3", "web-5f4-4 web-5f4-5", "web-5f4-6 web-5f4-7"}
	if !slices.Equal(got, want) {
		t.Fatalf("batches %q, want %q", got, want)
	}
}
