package graysync

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Instead mode meeting a Deployment taken over for alongside mode (kubegray.io/strategy set):
// one release patch, then the ordinary instead-mode sync. Sizes are by hand, R 10 and
// 25%/25% (surge 3, unavailable 2) unless noted, as in gray_test.go.

// newInsteadWorld is startGray with the API server's patch semantics, which the release needs.
func newInsteadWorld(t *testing.T, d *appsv1.Deployment) *grayWorld {
	t.Helper()
	w := startGray(t, d)
	w.installPatchReactor()
	return w
}

// wantReleasedStatus checks the status a gray Deployment keeps through the release: written
// by instead mode, no longer taken over, at revision rev, and held or not.
func (w *grayWorld) wantReleasedStatus(rev int64, held bool) {
	w.t.Helper()
	st := w.status()
	if st.Mode != grayapi.ModeInstead || st.TakenOver || st.Revision != rev || (st.HeldAt != nil) != held {
		w.t.Fatalf("status after the release = %+v, want mode instead, not taken over, revision %d, held %t", st, rev, held)
	}
}

func TestInsteadReleasesTakenOverGrayDeployment(t *testing.T) {
	// kubectl gray set --patch-takeover=always --image on an instead-mode cluster.
	w := newInsteadWorld(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600)))
	w.takeOverAsPolicy("v2", savedDefault)

	actions := w.sync()
	if got, want := verbsOf(actions), []string{"patch deployments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release actions = %v, want %v", got, want)
	}
	w.wantReleased(quarterStrategy())
	w.wantReleasedStatus(1, false)
	w.wantEvents("Normal GrayRelease Released from the alongside takeover: restored strategy " + savedDefault + ", unpaused")

	// The event of the patch: TestGraySingleHold's first sync (v2 at min(3 surge, T 2) = 2, v1
	// 10 → 8, held in the same sync).
	w.cap = 2
	actions = w.sync()
	if got, want := verbsOf(actions), []string{
		"update deployments/status", // gray status: revision 2, target 2
		"create replicasets",        // v2 at 2
		"update replicasets",        // v1 10 → 8
		"update deployments",        // paused, heldAt
		"update deployments/status", // counts, conditions, phase
	}; !reflect.DeepEqual(got, want) {
		t.Fatalf("gray sync actions = %v, want %v", got, want)
	}
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseProgressing, true)
	w.ready()
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Revision != 2 || st.StableRevision != 1 || st.Target != 2 {
		t.Fatalf("held status = %+v, want revision 2, stable 1, target 2", st)
	}
	if d := w.deployment(); d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Fatalf("strategy %s while held, want RollingUpdate", d.Spec.Strategy.Type)
	}
}

// TestInsteadKeepsTheHoldOfATakenOverDeployment is a cluster switched from alongside to
// instead mode while a taken-over rollout is held at 2/10: the release keeps the pause,
// which is the hold in instead mode, and the rollout goes on from there.
func TestInsteadKeepsTheHoldOfATakenOverDeployment(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20", testutil.WithProgressDeadline(600)), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 2
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	if st := w.status(); st.Phase != grayapi.PhaseHeld || !st.TakenOver {
		t.Fatalf("alongside status = %+v, want Held and taken over", st)
	}
	w.takeEvents()

	w.restart() // instead mode
	actions := w.sync()
	if got, want := verbsOf(actions), []string{"patch replicasets", "patch replicasets", "patch deployments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release actions = %v, want the freeze labels off v1 and v2, then %v", got, want)
	}
	w.wantFrozen(false)
	d := w.deployment()
	if _, ok := d.Annotations[grayapi.StrategyAnnotation]; ok || !d.Spec.Paused || !reflect.DeepEqual(d.Spec.Strategy, quarterStrategy()) {
		t.Fatalf("released to paused %t, strategy %+v, %s=%q; want paused, 25%%/25%%, no saved strategy", d.Spec.Paused, d.Spec.Strategy,
			grayapi.StrategyAnnotation, d.Annotations[grayapi.StrategyAnnotation])
	}
	w.wantReleasedStatus(2, true)
	w.wantEvents("Normal GrayRelease Released from the alongside takeover: restored strategy " + savedDefault +
		", kept paused: the gray rollout holds revision 2 at 20%")

	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)

	// Resume: upstream's rolling numbers from 8/2, as in TestGraySingleHold.
	w.cap = 10
	w.setAnnotation(grayapi.ResumeAnnotation, "2:next")
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.wantState(grayapi.PhaseProgressing, false)
	for _, want := range []map[string]int32{sz("v1", 3, "v2", 5), sz("v1", 3, "v2", 10), sz("v1", 0, "v2", 10)} {
		w.step()
		w.wantSizes(want)
	}
	w.settle()
	w.wantState(grayapi.PhaseComplete, false)
	w.noFlapping()
}

// TestInsteadKeepsTheResumeRequestOfAKeptHold: a resume request that arrived with the switch
// to instead mode is for the hold the release keeps, so it survives the release and the gray
// sync then honours it.
func TestInsteadKeepsTheResumeRequestOfAKeptHold(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 2
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))

	w.restart()
	w.setAnnotation(grayapi.ResumeAnnotation, "2:full")
	w.sync()
	if d := w.deployment(); !d.Spec.Paused || d.Annotations[grayapi.ResumeAnnotation] != "2:full" {
		t.Fatalf("after the release: paused %t, %s=%q; want paused and the request kept", d.Spec.Paused,
			grayapi.ResumeAnnotation, d.Annotations[grayapi.ResumeAnnotation])
	}
	w.cap = 10
	w.step()
	w.wantSizes(sz("v1", 8, "v2", 5))
	w.wantState(grayapi.PhaseProgressing, false)
	if _, ok := w.deployment().Annotations[grayapi.ResumeAnnotation]; ok {
		t.Fatal("the resume request was not consumed")
	}
	w.settle()
	w.wantSizes(sz("v1", 0, "v2", 10))
	w.wantState(grayapi.PhaseComplete, false)
}

// TestInsteadDropsAStaleHoldOfATakenOverDeployment: held at revision 2 in alongside mode,
// then the template changed as the cluster moved to instead mode. The hold is not for the
// revision in flight (3), so the release unpauses, and revision 3 starts at the first hold
// point: the abandoned canary v2 goes first, the stable v1 keeps R − T = 8.
func TestInsteadDropsAStaleHoldOfATakenOverDeployment(t *testing.T) {
	w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
	w.step()
	w.cap = 2
	w.takeOverAsPolicy("v2", savedDefault)
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.takeEvents()

	w.restart()
	w.setImage("v3")
	w.sync()
	w.wantReleased(quarterStrategy())
	w.wantReleasedStatus(2, false)
	w.wantEvents("restored strategy " + savedDefault + ", unpaused")

	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 0, "v3", 2))
	w.wantState(grayapi.PhaseHeld, true)
	if st := w.status(); st.Revision != 3 || st.StableRevision != 1 || st.Target != 2 {
		t.Fatalf("held status = %+v, want revision 3, stable 1, target 2", st)
	}
}

func TestInsteadReleasesTakenOverNonGrayDeployment(t *testing.T) {
	t.Run("never gray: the saved strategy rolls it out", func(t *testing.T) {
		const saved = "RollingUpdate;maxSurge=1;maxUnavailable=0"
		d := testutil.GrayWeb(10, "20")
		delete(d.Annotations, grayapi.PercentAnnotation)
		w := newGrayWorld(t, d)
		w.installPatchReactor()
		w.settle()
		w.takeOverAsPolicy("v2", saved)

		actions := w.sync()
		if got, want := verbsOf(actions), []string{"patch deployments"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("release actions = %v, want %v", got, want)
		}
		one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
		w.wantReleased(appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &one, MaxUnavailable: &zero}})
		w.wantEvents("Normal GrayRelease Released from the alongside takeover: restored strategy " + saved + ", unpaused")
		// Upstream's own two status writes in one sync conflict on a real API server too; the
		// next sync redoes the work.
		w.allowConflicts = true
		// Upstream with surge 1, unavailable 0: v2 is created at 11 − 10 = 1, v1 waits for it.
		w.step()
		w.wantSizes(sz("v1", 10, "v2", 1))
		w.settle()
		w.wantSizes(sz("v1", 0, "v2", 10))
	})

	t.Run("held alongside, annotation removed: gray status dropped, upstream finishes", func(t *testing.T) {
		w := newAlongsideWorld(t, testutil.GrayWeb(10, "20"), grayapi.TakeoverAdmission)
		w.step()
		w.cap = 2
		w.takeOverAsPolicy("v2", savedDefault)
		w.settle()
		w.takeEvents()

		w.restart()
		w.edit(func(d *appsv1.Deployment) { delete(d.Annotations, grayapi.PercentAnnotation) })
		actions := w.sync()
		if got, want := verbsOf(actions), []string{"patch replicasets", "patch replicasets", "patch deployments", "patch deployments/status"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("release actions = %v, want the freeze labels off, the release patch and the GrayHeld removal", got)
		}
		w.wantFrozen(false)
		w.wantReleased(quarterStrategy())
		d := w.deployment()
		if _, ok := d.Annotations[grayapi.StatusAnnotation]; ok || deployutilCondition(d, grayapi.ConditionGrayHeld) != nil {
			t.Fatalf("gray status left on a released non-gray Deployment: %v %+v", d.Annotations, d.Status.Conditions)
		}
		w.wantEvents("Normal GrayRelease Released from the alongside takeover: restored strategy " + savedDefault + ", unpaused")
		// Upstream from 8/2: v2 2 → 2 + min(13 − 10, 8) = 5 first, as in TestGrayAnnotationRemoved.
		w.cap = 10
		w.allowConflicts = true
		w.step()
		w.wantSizes(sz("v1", 8, "v2", 5))
		w.settle()
		w.wantSizes(sz("v1", 0, "v2", 10))
	})

	t.Run("saved Recreate is not gray in instead mode", func(t *testing.T) {
		w := newInsteadWorld(t, testutil.GrayWeb(4, "50"))
		w.takeOverAsPolicy("v2", "Recreate")
		actions := w.sync()
		if got, want := verbsOf(actions), []string{"patch deployments", "patch deployments/status"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("release actions = %v, want the release patch and the gray status removal", got)
		}
		w.wantReleased(appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType})
		if _, ok := w.deployment().Annotations[grayapi.StatusAnnotation]; ok {
			t.Fatal("gray status left on a Recreate Deployment")
		}
		// Upstream's Recreate: v1 down to 0 first, then v2 at 4.
		w.allowConflicts = true
		w.step()
		w.wantSizes(sz("v1", 0))
		w.settle()
		w.wantSizes(sz("v1", 0, "v2", 4))
	})
}

func TestInsteadReleasesUnreadableSavedStrategyToDefaults(t *testing.T) {
	w := newInsteadWorld(t, testutil.GrayWeb(10, "20"))
	w.takeOverAsPolicy("v2", "RollingUpdate;maxSurge=lots")
	actions := w.sync()
	if got, want := verbsOf(actions), []string{"patch deployments"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("release actions = %v, want %v", got, want)
	}
	w.wantReleased(quarterStrategy())
	w.wantEvents(`Warning GrayRelease Released from the alongside takeover: invalid kubegray.io/strategy "RollingUpdate;maxSurge=lots"`,
		`maxSurge: "lots" is not a non-negative integer or percentage`,
		"restored the default strategy "+savedDefault+", unpaused")
	// 25%/25% is TestGraySingleHold's strategy: the same hold at 8/2.
	w.cap = 2
	w.settle()
	w.wantSizes(sz("v1", 8, "v2", 2))
	w.wantState(grayapi.PhaseHeld, true)
}

// TestInsteadReleaseConflictsOnStaleCache: the release patch carries the cached
// resourceVersion, so a cache behind the server writes nothing (the sync is requeued).
func TestInsteadReleaseConflictsOnStaleCache(t *testing.T) {
	w := newInsteadWorld(t, testutil.GrayWeb(10, "20"))
	w.takeOverAsPolicy("v2", savedDefault)
	w.refreshCaches()
	w.setAnnotation("example.com/touched", "yes")
	before := len(w.f.client.Actions())
	if err := w.f.dc.Sync(w.f.ctx, grayKey); err == nil {
		t.Fatal("release over a stale cache succeeded")
	}
	if n := writes(w.f.client.Actions()[before:]); n != 1 {
		t.Fatalf("%d write attempts, want the one rejected patch", n)
	}
	w.wantTakenOver(savedDefault)
}
