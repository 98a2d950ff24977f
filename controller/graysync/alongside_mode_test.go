package graysync

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// savedDefault is what the takeover policy saves for the scenarios' 25%/25% strategy.
const savedDefault = "RollingUpdate;maxSurge=25%;maxUnavailable=25%"

// newAlongsideWorld is newGrayWorld with the controller in alongside mode (and the API
// server's patch semantics, see installPatchReactor).
func newAlongsideWorld(t *testing.T, d *appsv1.Deployment, takeover grayapi.Takeover) *grayWorld {
	t.Helper()
	w := newGrayWorldIn(t, d, Options{Mode: grayapi.ModeAlongside, Takeover: takeover})
	w.installPatchReactor()
	return w
}

// installPatchReactor puts the API server's patch semantics in front of the tracker: a
// resourceVersion in the patch is a precondition; the status subresource keeps spec and
// labels; the main resource keeps status and bumps the generation on spec or annotation
// changes.
func (w *grayWorld) installPatchReactor() {
	w.f.client.PrependReactor("patch", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		stored := w.deployment()
		var meta struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(patch.GetPatch(), &meta); err != nil {
			return true, nil, err
		}
		if sent := meta.Metadata.ResourceVersion; sent != "" && sent != stored.ResourceVersion {
			return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), stored.Name, fmt.Errorf("resourceVersion %s is stale", sent))
		}
		original, err := json.Marshal(stored)
		if err != nil {
			return true, nil, err
		}
		// Merge patches here never touch lists, where the two patch types differ.
		patched, err := strategicpatch.StrategicMergePatch(original, patch.GetPatch(), appsv1.Deployment{})
		if err != nil {
			return true, nil, err
		}
		next := &appsv1.Deployment{}
		if err := json.Unmarshal(patched, next); err != nil {
			return true, nil, err
		}
		next.ResourceVersion = stored.ResourceVersion
		if patch.GetSubresource() == "status" {
			next.Spec, next.Labels, next.Generation = stored.Spec, stored.Labels, stored.Generation
		} else {
			next.Status, next.Generation = stored.Status, stored.Generation
			if !apiequality.Semantic.DeepEqual(next.Spec, stored.Spec) || !apiequality.Semantic.DeepEqual(next.Annotations, stored.Annotations) {
				next.Generation++
			}
		}
		w.put(next)
		return true, w.deployment(), nil
	})
}

// takeOverAsPolicy changes the image in the same write as the takeover, as the admission
// policy (or kubectl gray set --image) does.
func (w *grayWorld) takeOverAsPolicy(image, saved string) {
	w.edit(func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = image
		d.Spec.Paused = true
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		d.Annotations[grayapi.StrategyAnnotation] = saved
	})
}

// wantTakenOver checks that the server has the Deployment paused on Recreate with saved.
func (w *grayWorld) wantTakenOver(saved string) {
	w.t.Helper()
	d := w.deployment()
	if !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate != nil ||
		d.Annotations[grayapi.StrategyAnnotation] != saved {
		w.t.Fatalf("not taken over with %q: paused %t, strategy %+v, %s=%q", saved, d.Spec.Paused, d.Spec.Strategy,
			grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
	}
}

// wantReleased checks that the server has the Deployment unpaused with strategy want and no
// saved strategy.
func (w *grayWorld) wantReleased(want appsv1.DeploymentStrategy) {
	w.t.Helper()
	d := w.deployment()
	if _, ok := d.Annotations[grayapi.StrategyAnnotation]; ok || d.Spec.Paused || !apiequality.Semantic.DeepEqual(d.Spec.Strategy, want) {
		w.t.Fatalf("not released to %+v: paused %t, strategy %+v, %s=%q", want, d.Spec.Paused, d.Spec.Strategy,
			grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
	}
}

// freezes runs the sync that freezes the ReplicaSets of a Deployment taken over (or about to
// be, eagerly): it writes the freeze label on every ReplicaSet and nothing else.
func (w *grayWorld) freezes() {
	w.t.Helper()
	actions := w.sync()
	var want []string
	for range w.replicaSets() {
		want = append(want, "patch replicasets")
	}
	if got := verbsOf(actions); !reflect.DeepEqual(got, want) {
		w.t.Fatalf("freezing sync actions = %v, want only the freeze labels %v", got, want)
	}
	w.wantFrozen(true)
}

// wantFrozen checks whether every ReplicaSet carries the freeze label.
func (w *grayWorld) wantFrozen(want bool) {
	w.t.Helper()
	for _, rs := range w.replicaSets() {
		if frozen := rs.Labels[grayapi.FrozenLabel] == grayapi.FrozenLabelValue; frozen != want {
			w.t.Fatalf("replica set %s frozen %t, want %t (labels %v)", rs.Name, frozen, want, rs.Labels)
		}
	}
}

// wantOnlyOurWrites checks that the actions wrote the Deployment through patches only (the
// built-in controller owns the rest of its status: no Update, no UpdateStatus).
func wantOnlyOurWrites(t *testing.T, actions []clienttesting.Action) {
	t.Helper()
	for _, a := range actions {
		if a.GetResource().Resource == "deployments" && a.GetVerb() == "update" {
			t.Fatalf("alongside mode wrote %s deployments/%s; only patches are allowed", a.GetVerb(), a.GetSubresource())
		}
	}
}

func quarterStrategy() appsv1.DeploymentStrategy {
	q := intstr.FromString("25%")
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &q, MaxUnavailable: &q}}
}

func TestAlongsideLeavesOtherDeploymentsAlone(t *testing.T) {
	d := testutil.GrayWeb(10, "20")
	delete(d.Annotations, grayapi.PercentAnnotation)
	w := newAlongsideWorld(t, d, grayapi.TakeoverEager)
	w.setImage("v2")
	// An orphan the Deployment would adopt in instead mode: claiming it is a write too.
	orphan := testutil.ReplicaSet("stray", 0, testutil.RSCreatedAt(w.created))
	orphan.Labels = maps.Clone(d.Spec.Selector.MatchLabels)
	w.put(orphan)
	if actions := w.sync(); len(actions) != 0 {
		t.Fatalf("a Deployment without %s got actions %v", grayapi.PercentAnnotation, verbs(actions))
	}
	// Paused and on Recreate but never ours: still left alone.
	w.edit(func(d *appsv1.Deployment) {
		d.Spec.Paused = true
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	})
	if actions := w.sync(); len(actions) != 0 {
		t.Fatalf("a paused Recreate Deployment that was never taken over got actions %v", verbs(actions))
	}
}

// TestAlongsideTakenOverRollout is TestGraySingleHold's rollout (R 10, hold 20%, saved
// 25%/25%) taken over by the policy: the same sizes, our hold only in kubegray.io/status, the
// Deployment paused on Recreate throughout, and one release patch at the end.
func TestAlongsideTakenOverRollout(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600)), grayapi.TakeoverAdmission)

	// Annotated but not taken over: only the completed revision is recorded, in the status and
	// in the durable record (v1 marked stable and given kubegray.io/percent).
	actions := w.step()
	if got, want := verbsOf(actions), []string{"patch replicasets", "patch replicasets", "patch deployments/status"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first sync actions = %v, want %v", got, want)
	}
	if st := w.status(); st.Mode != grayapi.ModeAlongside || st.Phase != grayapi.PhaseComplete || st.Revision != 1 || st.TakenOver {
		t.Fatalf("status of the untaken Deployment = %+v, want alongside, Complete, revision 1", st)
	}
	if n := writes(w.step()); n != 0 {
		t.Fatalf("a settled untaken Deployment made %d writes", n)
	}

	w.cap = 2 // ceil(10·20/100)
	w.takeOverAsPolicy("v2", savedDefault)
	w.freezes()
	actions = w.step()
	wantOnlyOurWrites(t, actions)
	if got, want := verbsOf(actions), []string{
		"list replicasets",         // none of v2 on the server either (View.NewReplicaSetNotCached)
		"patch deployments/status", // gray status: revision 2, target 2
		"create replicasets",       // v2 at min(3 surge, T 2) = 2, frozen
		"update replicasets",       // v1 10 → 8
		"patch deployments/status", // heldAt
		"patch deployments/status", // phase, GrayHeld
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("takeover sync actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantTakenOver(savedDefault)
	st := w.status()
	if st.Mode != grayapi.ModeAlongside || !st.TakenOver || st.Revision != 2 || st.StableRevision != 1 || st.Target != 2 || st.HeldAt == nil {
		t.Fatalf("status after the takeover sync = %+v", st)
	}
	w.step()
	if st := w.status(); st.Phase != grayapi.PhaseHeld {
		t.Fatalf("phase %s (%s), want Held", st.Phase, st.Message)
	}
	if c := deployutilCondition(w.deployment(), grayapi.ConditionGrayHeld); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("GrayHeld = %+v, want True", c)
	}
	if n := writes(w.step()); n != 0 {
		t.Fatalf("a settled hold made %d writes", n)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))

	// Resume to the end: upstream's rolling numbers with the saved 25%/25% (surge 3,
	// unavailable 2), while the server still says paused and Recreate.
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	actions = w.step()
	wantOnlyOurWrites(t, actions)
	w.wantSizes(sz("v1", 8, "v2", 5))
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.wantTakenOver(savedDefault)
	for _, want := range []map[string]int32{sz("v1", 3, "v2", 5), sz("v1", 3, "v2", 10), sz("v1", 0, "v2", 10)} {
		w.step()
		w.wantSizes(want)
	}
	w.wantFrozen(true)
	w.settle()
	w.wantReleased(quarterStrategy())
	w.wantFrozen(false)
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.TakenOver || st.StableRevision != 2 {
		t.Fatalf("status after release = %+v, want Complete, not taken over, stable 2", st)
	}
	// Complete is reported only by the release itself, never while still taken over.
	for _, a := range w.f.client.Actions() {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || a.GetResource().Resource != "deployments" {
			continue
		}
		var body struct {
			Metadata struct {
				Annotations map[string]*string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Fatal(err)
		}
		if v := body.Metadata.Annotations[grayapi.StatusAnnotation]; v != nil {
			if st, err := grayapi.ParseStatus(*v); err == nil && st.Phase == grayapi.PhaseComplete && st.TakenOver {
				t.Fatalf("a %s patch reported Complete while taken over: %s", a.GetSubresource(), *v)
			}
		}
	}
	w.wantEvents("GrayResumed", "GrayComplete", "GrayRelease", "revision 2 complete: restored strategy "+savedDefault)
	w.noFlapping()
}

func TestAlongsidePercentRemovedReleases(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 2
	w.takeOverAsPolicy("v2", "RollingUpdate;maxSurge=1;maxUnavailable=0")
	w.settle()
	// Surge 1, unavailable 0: v2 1, v1 9, v2 2, v1 8.
	w.wantSizes(sz("v1", 8, "v2", 2))
	if st := w.status(); st.Phase != grayapi.PhaseHeld {
		t.Fatalf("phase %s, want Held", st.Phase)
	}

	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	actions := w.sync()
	if got, want := verbsOf(actions), []string{
		"patch replicasets", "patch replicasets", // kubegray.io/percent off v1 and v2 (gray_record.go)
		"patch replicasets", "patch replicasets", // the freeze label off v1 and v2
		"patch deployments", "patch deployments/status",
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release actions = %v, want the percent records dropped, the release patch and the GrayHeld removal", got)
	}
	for _, rs := range w.replicaSets() {
		if _, ok := rs.Annotations[grayapi.PercentAnnotation]; ok {
			t.Errorf("%s still carries %s after the Deployment left gray", rs.Name, grayapi.PercentAnnotation)
		}
	}
	one := intstr.FromInt32(1)
	zero := intstr.FromInt32(0)
	w.wantReleased(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}})
	w.wantFrozen(false)
	d := w.deployment()
	if _, ok := d.Annotations[grayapi.StatusAnnotation]; ok || deployutilCondition(d, grayapi.ConditionGrayHeld) != nil {
		t.Fatalf("gray status left on a released Deployment: %v %+v", d.Annotations, d.Status.Conditions)
	}
	// The ReplicaSets are the built-in controller's now: not one more write of ours.
	w.wantSizes(sz("v1", 8, "v2", 2))
	if actions := w.sync(); len(actions) != 0 {
		t.Fatalf("a released Deployment without the annotation got actions %v", verbs(actions))
	}
	w.wantEvents("GrayRelease", "kubegray.io/percent was removed: restored strategy RollingUpdate;maxSurge=1;maxUnavailable=0")
}

func TestAlongsideRepairs(t *testing.T) {
	tests := []struct {
		name string
		// damage is done to a Deployment held at 2/10 under the takeover.
		damage func(d *appsv1.Deployment)
		// wantReleased: the strategy it must be released to; nil means taken over again,
		// with wantSaved (default savedDefault) as the saved strategy.
		wantReleased *appsv1.DeploymentStrategy
		wantSaved    string
		wantEvent    string
	}{
		{
			name:         "saved strategy lost: upstream defaults",
			damage:       func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.StrategyAnnotation) },
			wantReleased: ptrStrategy(quarterStrategy()),
			wantEvent:    "Warning GrayRelease Released to the built-in deployment controller: kubegray.io/strategy was removed from the taken-over Deployment: restored strategy " + savedDefault,
		},
		{
			name:         "saved strategy unreadable: upstream defaults",
			damage:       func(d *appsv1.Deployment) { d.Annotations[grayapi.StrategyAnnotation] = "RollingUpdate;maxSurge=lots" },
			wantReleased: ptrStrategy(quarterStrategy()),
			wantEvent:    `maxSurge: "lots" is not a non-negative integer or percentage`,
		},
		{
			name:      "unpaused behind the guard: paused again",
			damage:    func(d *appsv1.Deployment) { d.Spec.Paused = false },
			wantEvent: "Warning GrayTakeover Paused again with strategy Recreate",
		},
		{
			// What an apply of a manifest that spells the strategy out does where no takeover
			// policy saves it (alongside-eager): the guard lets it through, the Deployment
			// stays paused with its sizes frozen, and the strategy is the one to restore.
			name: "strategy set by an apply: saved, Recreate again",
			damage: func(d *appsv1.Deployment) {
				one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}}
			},
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=0",
			wantEvent: "Normal GrayTakeover Strategy RollingUpdate;maxSurge=1;maxUnavailable=0 set while taken over: saved in kubegray.io/strategy",
		},
		{
			// Also what `kubectl rollout undo` leaves without the takeover policy: the saved
			// strategy copied back from a ReplicaSet, the strategy the user has set since.
			name: "found on another RollingUpdate strategy: taken over again saving that one",
			damage: func(d *appsv1.Deployment) {
				one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
				d.Spec.Paused = false
				d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}}
			},
			wantSaved: "RollingUpdate;maxSurge=1;maxUnavailable=0",
			wantEvent: "Warning GrayTakeover Paused again with strategy Recreate (saved strategy RollingUpdate;maxSurge=1;maxUnavailable=0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
			w.step()
			w.cap = 2
			w.takeOverAsPolicy("v2", savedDefault)
			w.settle()
			w.wantSizes(sz("v1", 8, "v2", 2))
			w.takeEvents()

			w.edit(tt.damage)
			actions := w.sync()
			if n := len(updatedReplicaSets(actions)); n != 0 {
				t.Fatalf("the repair sync wrote %d ReplicaSets", n)
			}
			switch {
			case tt.wantReleased != nil:
				w.wantReleased(*tt.wantReleased)
			case tt.wantSaved != "":
				w.wantTakenOver(tt.wantSaved)
			default:
				w.wantTakenOver(savedDefault)
			}
			w.wantEvents(tt.wantEvent)
			// Whatever happens next, the hold share stays: no write widens the rollout.
			w.settle()
			w.wantSizes(sz("v1", 8, "v2", 2))
		})
	}
}

func ptrStrategy(s appsv1.DeploymentStrategy) *appsv1.DeploymentStrategy { return &s }

func TestAlongsideSavedRecreateIsReleased(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(4, "50"), grayapi.TakeoverAdmission)
	w.step()
	w.takeOverAsPolicy("v2", "Recreate")
	actions := w.sync()
	if n := len(updatedReplicaSets(actions)); n != 0 {
		t.Fatalf("a Recreate Deployment got %d ReplicaSet writes from us", n)
	}
	w.wantReleased(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType})
	w.wantEvents("GrayRelease", "strategy Recreate replaces all pods at once")
}

func TestAlongsideEager(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverEager)
	w.freezes()
	actions := w.sync()
	if got, want := verbsOf(actions), []string{"patch deployments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("eager takeover actions = %v, want one patch", got)
	}
	w.wantTakenOver(savedDefault)
	w.wantEvents("GrayTakeover", "strategy "+savedDefault+" saved in kubegray.io/strategy")
	// Nothing to roll out yet: the revision it runs is recorded, and it stays taken over.
	w.settle()
	w.wantTakenOver(savedDefault)
	if st := w.status(); st.Phase != grayapi.PhaseComplete || !st.TakenOver || st.Revision != 1 {
		t.Fatalf("status = %+v, want Complete on revision 1, taken over", st)
	}

	// A plain image change (no policy): the gray rollout holds at 2/10.
	w.cap = 2
	w.setImage("v2")
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantTakenOver(savedDefault)
	if st := w.status(); st.Phase != grayapi.PhaseHeld || st.StableRevision != 1 {
		t.Fatalf("status = %+v, want Held with stable revision 1", st)
	}
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	// Complete, and still taken over while annotated.
	w.wantTakenOver(savedDefault)
	if st := w.status(); st.Phase != grayapi.PhaseComplete || st.StableRevision != 2 {
		t.Fatalf("status = %+v, want Complete with stable revision 2", st)
	}
	w.noFlapping()

	// Annotation removed: released to the saved strategy.
	w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
	w.sync()
	w.wantReleased(quarterStrategy())
	w.wantFrozen(false)
}
