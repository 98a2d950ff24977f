package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// frozenAlongsideWeb is heldAlongsideWeb with its ReplicaSets frozen, as gray-controller leaves
// them while it runs the rollout.
func frozenAlongsideWeb(t *testing.T) []runtime.Object {
	objs := heldAlongsideWeb(t)
	for _, o := range objs {
		if rs, ok := o.(*appsv1.ReplicaSet); ok {
			rs.Labels[grayapi.FrozenLabel] = grayapi.FrozenLabelValue
		}
	}
	return objs
}

// releaseRun runs `kubectl gray release` against cs; admission, when given, answers every patch
// of the Deployment first, as an admission policy would.
func releaseRun(cs *fake.Clientset, args []string, admission ...k8stesting.ReactionFunc) (string, error) {
	// The fake tracker would store a dry run; the API server answers with the patched object
	// and stores nothing.
	cs.PrependReactor("patch", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if p := action.(k8stesting.PatchActionImpl); len(p.PatchOptions.DryRun) > 0 {
			d, err := patchedDeployment(cs, p)
			return true, d, err
		}
		return false, nil, nil
	})
	for _, react := range admission {
		cs.PrependReactor("patch", "deployments", react)
	}
	streams, out, _ := testStreams()
	o := NewReleaseOptions(streams)
	o.Namespace, o.Client = ns, cs
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

// patchedDeployment is the Deployment of p with p's strategic merge patch applied, not stored.
func patchedDeployment(cs *fake.Clientset, p k8stesting.PatchActionImpl) (*appsv1.Deployment, error) {
	obj, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), ns, p.Name)
	if err != nil {
		return nil, err
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	after, err := strategicpatch.StrategicMergePatch(before, p.Patch, appsv1.Deployment{})
	if err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	return &d, json.Unmarshal(after, &d)
}

// takeoverPolicy answers patches of the Deployment as kubegray-takeover does while the API
// server still runs it: a strategy set on a Deployment taken over (paused, Recreate,
// kubegray.io/strategy) is saved in kubegray.io/strategy and spec.strategy stays Recreate;
// anything else in the patch, an unpause included, goes through.
func takeoverPolicy(cs *fake.Clientset) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		p := action.(k8stesting.PatchActionImpl)
		if p.Subresource != "" {
			return false, nil, nil
		}
		obj, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), ns, p.Name)
		if err != nil {
			return true, nil, err
		}
		old := obj.(*appsv1.Deployment)
		d, err := patchedDeployment(cs, p)
		if err != nil {
			return true, nil, err
		}
		_, saved := old.Annotations[grayapi.StrategyAnnotation]
		if saved && old.Spec.Paused && old.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType &&
			d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			value, err := grayapi.FormatStrategy(d.Spec.Strategy)
			if err != nil {
				return true, nil, err
			}
			d.Annotations[grayapi.StrategyAnnotation] = value
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}
		if len(p.PatchOptions.DryRun) == 0 {
			if err := cs.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("deployments"), d, ns); err != nil {
				return true, nil, err
			}
		}
		return true, d, nil
	}
}

func liveWeb(t *testing.T, cs *fake.Clientset) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func frozenReplicaSets(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	list, err := cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var frozen []string
	for _, rs := range list.Items {
		if _, ok := rs.Labels[grayapi.FrozenLabel]; ok {
			frozen = append(frozen, rs.Name)
		}
	}
	return frozen
}

func TestReleaseHandsTheDeploymentBack(t *testing.T) {
	tests := []struct {
		name       string
		userPaused bool
		saved      string
		wantOut    string
	}{
		{name: "held, not paused by its user", saved: "RollingUpdate;maxSurge=25%;maxUnavailable=25%",
			wantOut: "deployment.apps/web released (strategy RollingUpdate;maxSurge=25%;maxUnavailable=25% restored, unpaused)\n"},
		{name: "paused by its user", userPaused: true, saved: "RollingUpdate;maxSurge=1;maxUnavailable=0",
			wantOut: "deployment.apps/web released (strategy RollingUpdate;maxSurge=1;maxUnavailable=0 restored, left paused as its user paused it)\n"},
		{name: "saved without limits gets the API defaults", saved: "RollingUpdate",
			wantOut: "deployment.apps/web released (strategy RollingUpdate restored, unpaused)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := frozenAlongsideWeb(t)
			d := objs[0].(*appsv1.Deployment)
			d.Annotations[grayapi.StrategyAnnotation] = tt.saved
			d.Annotations[grayapi.ResumeAnnotation] = "2:next"
			if tt.userPaused {
				d.Annotations[grayapi.PausedAnnotation] = "true"
			}
			cs := fake.NewClientset(objs...)
			out, err := releaseRun(cs, []string{"web"})
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.wantOut {
				t.Errorf("printed %q, want %q", out, tt.wantOut)
			}
			live := liveWeb(t, cs)
			want, err := grayapi.ParseStrategy(tt.saved)
			if err != nil {
				t.Fatal(err)
			}
			want = withRollingDefaults(want)
			if live.Spec.Strategy.Type != want.Type || live.Spec.Strategy.RollingUpdate.MaxSurge.String() != want.RollingUpdate.MaxSurge.String() ||
				live.Spec.Strategy.RollingUpdate.MaxUnavailable.String() != want.RollingUpdate.MaxUnavailable.String() {
				t.Errorf("strategy %+v, want %s", live.Spec.Strategy, tt.saved)
			}
			if live.Spec.Paused != tt.userPaused {
				t.Errorf("paused %t, want %t", live.Spec.Paused, tt.userPaused)
			}
			for _, key := range []string{grayapi.StrategyAnnotation, grayapi.PausedAnnotation, grayapi.StatusAnnotation, grayapi.ResumeAnnotation} {
				if _, ok := live.Annotations[key]; ok {
					t.Errorf("%s left on the released Deployment", key)
				}
			}
			if _, ok := live.Annotations[grayapi.PercentAnnotation]; !ok {
				t.Errorf("%s was removed; release keeps the opt-in", grayapi.PercentAnnotation)
			}
			if c := deployutil.GetDeploymentCondition(live.Status, grayapi.ConditionGrayHeld); c != nil {
				t.Errorf("GrayHeld left: %+v", c)
			}
			if frozen := frozenReplicaSets(t, cs); len(frozen) > 0 {
				t.Errorf("replica sets still frozen: %v", frozen)
			}
		})
	}
}

func TestReleaseOfADeploymentNotTakenOver(t *testing.T) {
	cs := fake.NewClientset(heldWeb(t)...)
	out, err := releaseRun(cs, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "deployment.apps/web not taken over, nothing to release\n"; out != want {
		t.Errorf("printed %q, want %q", out, want)
	}
	if ps := patches(cs); len(ps) != 0 {
		t.Errorf("a Deployment that is not taken over got %d patches", len(ps))
	}
}

func TestReleaseRefusals(t *testing.T) {
	t.Run("unreadable saved strategy", func(t *testing.T) {
		objs := frozenAlongsideWeb(t)
		objs[0].(*appsv1.Deployment).Annotations[grayapi.StrategyAnnotation] = "Blue-Green"
		cs := fake.NewClientset(objs...)
		_, err := releaseRun(cs, []string{"web"})
		if err == nil || !strings.Contains(err.Error(), `deployment default/web: invalid kubegray.io/strategy "Blue-Green"`) {
			t.Fatalf("error %v, want one naming the Deployment and the bad value", err)
		}
		if frozen := frozenReplicaSets(t, cs); len(frozen) != 2 {
			t.Errorf("a refused release thawed replica sets: frozen now %v", frozen)
		}
	})
	t.Run("the takeover policy still acts, the guard is gone", func(t *testing.T) {
		cs := fake.NewClientset(frozenAlongsideWeb(t)...)
		_, err := releaseRun(cs, []string{"web"}, takeoverPolicy(cs))
		for _, want := range []string{"deployment default/web: the API server kept it taken over (strategy Recreate",
			"kubegray-takeover admission policy still acts", "nothing was unpaused", "run kubectl gray release again"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one saying %q", err, want)
			}
		}
		live := liveWeb(t, cs)
		if !live.Spec.Paused || live.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("after the refused release: paused %t strategy %s, want paused on Recreate", live.Spec.Paused, live.Spec.Strategy.Type)
		}
	})
	t.Run("the guard policy refuses it", func(t *testing.T) {
		cs := fake.NewClientset(frozenAlongsideWeb(t)...)
		refuse := func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(appsv1.Resource("deployments"), "web",
				errors.New("ValidatingAdmissionPolicy 'kubegray-guard' with binding 'kubegray-guard' denied request"))
		}
		_, err := releaseRun(cs, []string{"web"}, refuse)
		for _, want := range []string{"deployment default/web: refused by an admission policy", "kubegray-guard", "gray-controller releases the Deployment itself",
			"'kubectl annotate deployment web -n default kubegray.io/percent-'"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one saying %q", err, want)
			}
		}
		if frozen := frozenReplicaSets(t, cs); len(frozen) != 2 {
			t.Errorf("a refused release thawed replica sets: frozen now %v", frozen)
		}
	})
}
