package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// grayEnv is one gray scenario's namespace on a cluster run by our controller.
type grayEnv struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
	rec    *recorder
	// eager: alongside mode with --takeover=eager, which keeps an annotated
	// Deployment taken over (a Complete rollout stays paused), and whose guard
	// refuses to create one annotated: it is created plain and opted in.
	eager bool
}

func newGrayEnv(t *testing.T, c *cluster.Cluster, name string) *grayEnv {
	t.Helper()
	ns := "gray-" + name
	if err := createNamespace(context.Background(), c.Client, ns); err != nil {
		t.Fatal(err)
	}
	return &grayEnv{t: t, client: c.Client, ns: ns, rec: startRecorder(t, c.Client, ns)}
}

func (e *grayEnv) do(a action) {
	e.t.Helper()
	if err := a(context.Background(), e.client, e.ns); err != nil {
		e.t.Fatal(err)
	}
}

// grayState is what a gray Deployment should settle to; numbers are written
// by hand from the target rule T = ceil(R·P/100), 1 ≤ T ≤ R−1.
type grayState struct {
	phase    grayapi.Phase
	newSpec  int32
	oldTotal int32
	paused   bool
}

// observed reads the Deployment and its ReplicaSets the way a person would.
func (e *grayEnv) observed(name string) (grayState, *appsv1.Deployment, string) {
	ctx := context.Background()
	d, err := e.client.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return grayState{}, nil, err.Error()
	}
	list, err := e.client.AppsV1().ReplicaSets(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return grayState{}, nil, err.Error()
	}
	var s grayState
	s.paused = d.Spec.Paused
	newAvailable := int32(-1)
	var sizes []string
	for _, rs := range list.Items {
		if !ownedBy(&rs, d) {
			continue
		}
		spec := replicasOf(rs.Spec.Replicas)
		sizes = append(sizes, fmt.Sprintf("rev %s: %d (available %d)", rs.Annotations[deployutil.RevisionAnnotation], spec, rs.Status.AvailableReplicas))
		if deployutil.EqualIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			s.newSpec = spec
			newAvailable = rs.Status.AvailableReplicas
		} else {
			s.oldTotal += spec
		}
	}
	status, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	if err == nil {
		s.phase = status.Phase
	}
	return s, d, fmt.Sprintf("phase %q paused %v, replicasets %v, new available %d, status %s",
		s.phase, s.paused, sizes, newAvailable, d.Annotations[grayapi.StatusAnnotation])
}

// expect waits until the Deployment settles at want.
func (e *grayEnv) expect(name string, want grayState) *appsv1.Deployment {
	e.t.Helper()
	var d *appsv1.Deployment
	if e.eager && want.phase == grayapi.PhaseComplete {
		want.paused = true
	}
	eventually(e.t, 60*time.Second, fmt.Sprintf("deployment %s/%s at %+v", e.ns, name, want), func() (bool, string) {
		got, obj, msg := e.observed(name)
		d = obj
		return got == want, msg
	})
	return d
}

// resume writes kubegray.io/resume for the revision in flight, as
// `kubectl gray resume` does.
func (e *grayEnv) resume(name string, full bool) {
	e.t.Helper()
	e.do(mutateDeployment(name, func(d *appsv1.Deployment) {
		status, err := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
		if err != nil {
			e.t.Errorf("deployment %s has no readable gray status: %v", name, err)
			return
		}
		d.Annotations[grayapi.ResumeAnnotation] = grayapi.FormatResume(grayapi.Resume{Revision: status.Revision, Full: full})
	}))
}

// finish resumes a held rollout to the end and waits for it to complete, so
// that every scenario ends with an ordinary Deployment (alongside mode must
// never leave one taken over).
func (e *grayEnv) finish(name string, replicas int32) {
	e.t.Helper()
	e.resume(name, true)
	e.expect(name, grayState{phase: grayapi.PhaseComplete, newSpec: replicas})
}

func (e *grayEnv) heldCondition(name string) *appsv1.DeploymentCondition {
	d, err := e.client.AppsV1().Deployments(e.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return deployutil.GetDeploymentCondition(d.Status, grayapi.ConditionGrayHeld)
}

// wantHeldMessage waits for GrayHeld to be True with message: the status annotation and the
// condition can land in separate writes.
func (e *grayEnv) wantHeldMessage(name, message string) {
	e.t.Helper()
	eventually(e.t, 15*time.Second, "GrayHeld True: "+message, func() (bool, string) {
		c := e.heldCondition(name)
		return c != nil && c.Status == corev1.ConditionTrue && c.Message == message, fmt.Sprintf("GrayHeld %+v", c)
	})
}

// startStable creates a gray Deployment and waits for its first revision to
// be fully rolled out: with nothing to canary against, it goes straight to 100%.
// With eager takeover it is created without its kubegray.io annotations, which
// are added once the built-in controller has rolled it out.
func (e *grayEnv) startStable(d *appsv1.Deployment) {
	e.t.Helper()
	if !e.eager {
		e.do(createDeployment(d))
		e.expect(d.Name, grayState{phase: grayapi.PhaseComplete, newSpec: *d.Spec.Replicas})
		return
	}
	plain := d.DeepCopy()
	for key := range plain.Annotations {
		if grayapi.IsGrayAnnotation(key) {
			delete(plain.Annotations, key)
		}
	}
	e.do(createDeployment(plain))
	waitRolledOut(e.t, e.client, e.ns, d.Name, 60*time.Second)
	e.do(mutateDeployment(d.Name, func(live *appsv1.Deployment) {
		for key, value := range d.Annotations {
			live.Annotations[key] = value
		}
	}))
	e.expect(d.Name, grayState{phase: grayapi.PhaseComplete, newSpec: *d.Spec.Replicas})
}

func setPercent(name, value string) action {
	return setAnnotation(name, grayapi.PercentAnnotation, value)
}

func removeAnnotation(name, key string) action {
	return mutateDeployment(name, func(d *appsv1.Deployment) { delete(d.Annotations, key) })
}

// grayMode is what differs between the two ways of running the controller
// for the same gray scenarios.
type grayMode struct {
	// env makes a scenario's namespace (alongside adds its own checks).
	env func(t *testing.T, c *cluster.Cluster, name string) *grayEnv
	// invalidPaused: whether a rollout stopped by an invalid annotation is
	// paused (alongside: the takeover pauses it before the controller looks).
	invalidPaused bool
	// plainUnpauseIsNext: a plain `kubectl rollout resume` of a held
	// Deployment counts as "next" (instead mode; alongside's guard policy
	// refuses the unpause instead).
	plainUnpauseIsNext bool
}

// TestGray runs the gray scenarios of instead mode on one real control plane
// (no built-in deployment controller) with gray-controller, each in its own
// namespace under the invariant recorder.
func TestGray(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")
	runGrayScenarios(t, c, grayMode{env: newGrayEnv, plainUnpauseIsNext: true})
}

// TestAlongsideGrayScenarios runs the same scenarios, with the same exact
// assertions, in alongside mode: the stock kube-controller-manager keeps its
// deployment controller, the admission policies of manifests/alongside take
// each rollout over, and gray-controller runs as its ServiceAccount.
func TestAlongsideGrayScenarios(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{})
	applyManifests(t, c, overlayManifests(t, "alongside"))
	startAlongsideController(t, c)
	runGrayScenarios(t, c, grayMode{env: newAlongsideEnv, invalidPaused: true})
}

func runGrayScenarios(t *testing.T, c *cluster.Cluster, m grayMode) {
	newGrayEnv := m.env
	held := grayapi.PhaseHeld
	complete := grayapi.PhaseComplete

	t.Run("single hold at 20% of 10", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "single")
		e.startStable(testutil.GrayDeployment("web", 10, "20"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		if cond := e.heldCondition("web"); cond == nil || cond.Status != corev1.ConditionTrue {
			t.Fatalf("GrayHeld condition = %+v, want True", cond)
		}
		e.resume("web", false)
		e.expect("web", grayState{phase: complete, newSpec: 10})
		if cond := e.heldCondition("web"); cond != nil && cond.Status == corev1.ConditionTrue {
			t.Fatalf("GrayHeld still True after completion: %+v", cond)
		}
	})

	t.Run("opted in at rest, then a new image: no rollback said", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "optin")
		plain := testutil.GrayDeployment("web", 10, "20")
		delete(plain.Annotations, grayapi.PercentAnnotation)
		e.do(createDeployment(plain))
		waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
		e.do(setPercent("web", "20"))
		e.expect("web", grayState{phase: complete, newSpec: 10})
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		e.saidNoRollback("web")
		e.finish("web", 10)
	})

	t.Run("steps 10,30,60 through every resume", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "steps")
		e.startStable(testutil.GrayDeployment("web", 10, "10,30,60"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 1, oldTotal: 9, paused: true})
		e.resume("web", false)
		e.expect("web", grayState{phase: held, newSpec: 3, oldTotal: 7, paused: true})
		e.resume("web", false)
		e.expect("web", grayState{phase: held, newSpec: 6, oldTotal: 4, paused: true})
		e.resume("web", false)
		e.expect("web", grayState{phase: complete, newSpec: 10})
	})

	t.Run("resume full", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "full")
		e.startStable(testutil.GrayDeployment("web", 10, "10,30,60"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 1, oldTotal: 9, paused: true})
		e.resume("web", true)
		e.expect("web", grayState{phase: complete, newSpec: 10})
	})

	if m.plainUnpauseIsNext {
		t.Run("kubectl rollout resume counts as next", func(t *testing.T) {
			t.Parallel()
			e := newGrayEnv(t, c, "unpause")
			e.startStable(testutil.GrayDeployment("web", 10, "20,50"))
			e.do(setImage("web", "nginx:1.26"))
			e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
			e.do(setPaused("web", false))
			e.expect("web", grayState{phase: held, newSpec: 5, oldTotal: 5, paused: true})
			e.finish("web", 10)
		})
	}

	t.Run("scale 10 to 20 to 19 to 3 while held", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "scale")
		e.startStable(testutil.GrayDeployment("web", 10, "20"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		e.wantHeldMessage("web", "held at 20% (step 1/1): 2 of 10 replicas on revision 2; run kubectl gray resume")
		e.do(scaleDeployment("web", 20))
		e.expect("web", grayState{phase: held, newSpec: 4, oldTotal: 16, paused: true})
		// Argo CD shows this message: the hold it describes is the one after the scale.
		e.wantHeldMessage("web", "held at 20% (step 1/1): 4 of 20 replicas on revision 2; run kubectl gray resume")
		// 20% of 19 is still 4 (ceil 3.8): the hold stays as it is, its message does not.
		e.do(scaleDeployment("web", 19))
		e.expect("web", grayState{phase: held, newSpec: 4, oldTotal: 15, paused: true})
		e.wantHeldMessage("web", "held at 20% (step 1/1): 4 of 19 replicas on revision 2; run kubectl gray resume")
		e.do(scaleDeployment("web", 3))
		e.expect("web", grayState{phase: held, newSpec: 1, oldTotal: 2, paused: true})
		e.wantHeldMessage("web", "held at 20% (step 1/1): 1 of 3 replicas on revision 2; run kubectl gray resume")
		e.finish("web", 3)
	})

	t.Run("maxSurge 0 maxUnavailable 1", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "surge0")
		e.startStable(testutil.GrayDeployment("web", 10, "30", testutil.WithRollingUpdate(intstr.FromInt32(0), intstr.FromInt32(1))))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 3, oldTotal: 7, paused: true})
		e.finish("web", 10)
	})

	t.Run("maxSurge 100%", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "surge100")
		e.startStable(testutil.GrayDeployment("web", 10, "30", testutil.WithRollingUpdate(intstr.FromString("100%"), intstr.FromInt32(0))))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 3, oldTotal: 7, paused: true})
		e.finish("web", 10)
	})

	for _, tc := range []struct {
		replicas       int32
		newSpec, older int32
	}{
		{replicas: 1, newSpec: 1, older: 0}, // ceil(0.5) = 1: one replica cannot be split
		{replicas: 2, newSpec: 1, older: 1},
		{replicas: 3, newSpec: 2, older: 1}, // ceil(1.5) = 2 ≤ R−1
	} {
		t.Run(fmt.Sprintf("50%% of %d", tc.replicas), func(t *testing.T) {
			t.Parallel()
			e := newGrayEnv(t, c, "r"+strconv.Itoa(int(tc.replicas)))
			e.startStable(testutil.GrayDeployment("web", tc.replicas, "50"))
			e.do(setImage("web", "nginx:1.26"))
			e.expect("web", grayState{phase: held, newSpec: tc.newSpec, oldTotal: tc.older, paused: true})
			e.finish("web", tc.replicas)
		})
	}

	t.Run("percent 0 creates the new ReplicaSet empty and holds", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "zero")
		e.startStable(testutil.GrayDeployment("web", 4, "0,50"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 0, oldTotal: 4, paused: true})
		e.resume("web", false)
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 2, paused: true})
		e.finish("web", 4)
	})

	t.Run("new template while held starts again at the first hold point", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "retemplate")
		e.startStable(testutil.GrayDeployment("web", 10, "20,50"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		e.resume("web", false)
		e.expect("web", grayState{phase: held, newSpec: 5, oldTotal: 5, paused: true})
		e.do(setImage("web", "nginx:1.27"))
		d := e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		// Old ReplicaSets had to give up 2 of their 10: the abandoned canary
		// (revision 2) gives them, the stable revision 1 keeps its 5.
		want := map[string]int32{"1": 5, "2": 3, "3": 2}
		for _, rs := range ownedReplicaSets(t, e.client, d) {
			rev := rs.Annotations[deployutil.RevisionAnnotation]
			if replicasOf(rs.Spec.Replicas) != want[rev] {
				t.Errorf("revision %s (%s) has %d replicas, want %d", rev, rs.Name, replicasOf(rs.Spec.Replicas), want[rev])
			}
		}
		e.finish("web", 10)
	})

	t.Run("rollback to stable while held skips the holds", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "rollback")
		e.startStable(testutil.GrayDeployment("web", 10, "20,50"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		e.do(mutateDeployment("web", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "nginx:1.25"
		}))
		e.expect("web", grayState{phase: complete, newSpec: 10})
	})

	for i, bad := range []string{"abc", "150", "-5", "30,10", "20%%", ""} {
		t.Run(fmt.Sprintf("invalid percent %q stops and recovers", bad), func(t *testing.T) {
			t.Parallel()
			e := newGrayEnv(t, c, "invalid-"+strconv.Itoa(i))
			e.startStable(testutil.GrayDeployment("web", 10, "20"))
			e.do(setPercent("web", bad))
			e.do(setImage("web", "nginx:1.26"))
			e.expect("web", grayState{phase: grayapi.PhaseInvalid, newSpec: 0, oldTotal: 10, paused: m.invalidPaused})
			e.do(setPercent("web", "20"))
			e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
			e.finish("web", 10)
		})
	}

	t.Run("annotation removed mid-rollout completes normally", func(t *testing.T) {
		t.Parallel()
		e := newGrayEnv(t, c, "removed")
		e.startStable(testutil.GrayDeployment("web", 10, "20"))
		e.do(setImage("web", "nginx:1.26"))
		e.expect("web", grayState{phase: held, newSpec: 2, oldTotal: 8, paused: true})
		e.do(removeAnnotation("web", grayapi.PercentAnnotation))
		e.expect("web", grayState{newSpec: 10})
		waitRolledOut(t, e.client, e.ns, "web", 60*time.Second)
	})
}

// TestGrayControllerRestart stops and restarts gray-controller while a
// rollout is held and while it progresses: the state lives in the cluster, so
// the new process carries on without overshooting.
func TestGrayControllerRestart(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Controllers: cluster.WithoutDeploymentController})
	startGrayController(t, c, "--mode=instead")
	restart := func() {
		t.Helper()
		if err := c.StopComponent(grayControllerName, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		startGrayController(t, c, "--mode=instead")
	}
	e := newGrayEnv(t, c, "restart")

	e.startStable(testutil.GrayDeployment("web", 10, "20,60"))
	e.do(setImage("web", "nginx:1.26"))
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
	restart()
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})

	// Slow availability keeps the next step in progress across the restart.
	e.do(mutateDeployment("web", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 3 }))
	e.resume("web", false)
	eventually(t, 30*time.Second, "rollout toward 60% in progress", func() (bool, string) {
		s, _, msg := e.observed("web")
		return s.phase == grayapi.PhaseProgressing && s.newSpec > 2, msg
	})
	restart()
	e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 6, oldTotal: 4, paused: true})
}
