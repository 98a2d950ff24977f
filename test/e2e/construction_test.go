package e2e

// Alongside mode by construction: what people do to a gray Deployment while the built-in
// deployment controller keeps running, each case driven with kubectl as a user would, under
// the recorder, which fails on any resize of a frozen ReplicaSet (or of one of a taken-over
// Deployment) by anyone but gray-controller, on a canary above its target, and on availability
// below R − maxUnavailable.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// TestAlongsideByConstruction runs the cases on Kubernetes 1.37 as manifests/alongside installs
// gray-controller (takeover by the admission policy).
func TestAlongsideByConstruction(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Audit: true})
	applyManifests(t, c, overlayManifests(t, "alongside"))
	startAlongsideController(t, c)
	runConstructionCases(t, c, false)
}

// TestAlongsideEagerByConstruction runs them as manifests/alongside-eager installs it, on
// whichever control plane KUBEGRAY_CONTROLPLANE names (make test runs it on 1.35).
func TestAlongsideEagerByConstruction(t *testing.T) {
	c := cluster.StartForTest(t, cluster.Options{Audit: true})
	applyManifests(t, c, overlayManifests(t, "alongside-eager"))
	startAlongsideController(t, c, "--takeover=eager")
	runConstructionCases(t, c, true)
}

// constructionCase is one case's namespace, user and overlay.
type constructionCase struct {
	t     *testing.T
	c     *cluster.Cluster
	e     *grayEnv
	u     *pluginUser
	eager bool
}

// constructionImage is the image every case rolls out (from nginx:1.25).
const constructionImage = "nginx:1.26"

// constructionHeld is web held at 20% of 10.
var constructionHeld = grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true}

// webManifest is the Deployment of every case: R 10, maxSurge 1, maxUnavailable 0, hold at
// 20%, as a manifest file kubectl creates it from.
func (k *constructionCase) webManifest(image string, annotated bool, opts ...testutil.DeploymentOption) string {
	opts = append([]testutil.DeploymentOption{testutil.WithTypeMeta(), testutil.WithImage(image), testutil.WithReplicas(10),
		testutil.WithRollingUpdate(intstr.FromInt32(1), intstr.FromInt32(0))}, opts...)
	if annotated {
		opts = append(opts, testutil.WithAnnotation(grayapi.PercentAnnotation, "20"))
	}
	d := testutil.Deployment("web", opts...)
	d.Namespace = k.e.ns
	data, err := json.Marshal(d)
	if err != nil {
		k.t.Fatal(err)
	}
	// Not under t.TempDir: kubectl splits -f at commas, which test names have.
	f, err := os.CreateTemp("", "web-*.json")
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.Write(data); err != nil {
		k.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		k.t.Fatal(err)
	}
	return f.Name()
}

func newConstructionCase(t *testing.T, c *cluster.Cluster, name string, eager bool) *constructionCase {
	env := newAlongsideEnv
	if eager {
		env = newEagerEnv
	}
	e := env(t, c, name)
	t.Cleanup(func() { reportRefusals(t, c, e.ns) })
	return &constructionCase{t: t, c: c, e: e, u: newPluginUser(t, c, e.ns), eager: eager}
}

// optedIn creates web plain, lets the built-in controller roll it out, and then opts it in,
// as most Deployments become gray.
func (k *constructionCase) optedIn() {
	k.t.Helper()
	k.u.must("create", "-f", k.webManifest("nginx:1.25", false))
	k.u.must("rollout", "status", "deployment/web", "--timeout=60s")
	k.u.must("annotate", "deployment/web", grayapi.PercentAnnotation+"=20")
	k.e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10, paused: k.eager})
}

// held opts web in and holds a new image at 2/8.
func (k *constructionCase) held() {
	k.t.Helper()
	k.optedIn()
	k.u.must("set", "image", "deployment/web", "app="+constructionImage)
	k.e.expect("web", constructionHeld)
}

// finish resumes to the end, and checks the end state: strategy and pause as the user left them
// (eager keeps an annotated Deployment taken over, paused on Recreate).
func (k *constructionCase) finish(wantUserPaused bool) {
	k.t.Helper()
	k.u.must("gray", "resume", "web", "--full")
	k.e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10, paused: k.eager || wantUserPaused})
	d := k.e.get("web")
	if k.eager {
		alongsideTakenOver(k.t, d, "RollingUpdate;maxSurge=1;maxUnavailable=0")
		if _, paused := d.Annotations[grayapi.PausedAnnotation]; paused != wantUserPaused {
			k.t.Errorf("%s set %t after the rollout, want %t", grayapi.PausedAnnotation, paused, wantUserPaused)
		}
		return
	}
	eventually(k.t, 60*time.Second, "web released", func() (bool, string) {
		d = k.e.get("web")
		_, taken := d.Annotations[grayapi.StrategyAnnotation]
		_, pausedNote := d.Annotations[grayapi.PausedAnnotation]
		ru := d.Spec.Strategy.RollingUpdate
		ok := !taken && !pausedNote && d.Spec.Paused == wantUserPaused && ru != nil && ru.MaxSurge.String() == "1" && ru.MaxUnavailable.String() == "0"
		return ok, fmt.Sprintf("paused %t strategy %+v annotations %v", d.Spec.Paused, d.Spec.Strategy, d.Annotations)
	})
	k.wantThawed()
}

// stillHeld checks for a few seconds that web does not move from its hold.
func (k *constructionCase) stillHeld(want grayState) {
	k.t.Helper()
	consistently(3*time.Second, 300*time.Millisecond, func() {
		if got, _, msg := k.e.observed("web"); got.newSpec != want.newSpec || got.oldTotal != want.oldTotal {
			k.t.Fatalf("web moved from new %d old %d: %s", want.newSpec, want.oldTotal, msg)
		}
	})
}

// wantThawed fails if a ReplicaSet of web is still frozen.
func (k *constructionCase) wantThawed() {
	k.t.Helper()
	for _, rs := range ownedReplicaSets(k.t, k.e.client, k.e.get("web")) {
		if _, frozen := rs.Labels[grayapi.FrozenLabel]; frozen {
			k.t.Errorf("replica set %s still frozen after the release", rs.Name)
		}
	}
}

// stableReplicaSet is the name of web's ReplicaSet that runs the first image.
func (k *constructionCase) stableReplicaSet() string {
	k.t.Helper()
	return k.stable().Name
}

// stable is web's replica set of nginx:1.25.
func (k *constructionCase) stable() appsv1.ReplicaSet {
	k.t.Helper()
	for _, rs := range ownedReplicaSets(k.t, k.e.client, k.e.get("web")) {
		if imageOf(&rs.Spec.Template) == "nginx:1.25" {
			return rs
		}
	}
	k.t.Fatal("web has no replica set of nginx:1.25")
	return appsv1.ReplicaSet{}
}

func runConstructionCases(t *testing.T, c *cluster.Cluster, eager bool) {
	t.Run("cases", func(t *testing.T) {
		run := func(name string, body func(k *constructionCase)) {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				body(newConstructionCase(t, c, strings.Fields(name)[0], eager))
			})
		}
		run("pause then image change then kubectl rollout resume", func(k *constructionCase) {
			// Paused before it is opted in: with eager takeover a gray Deployment is paused
			// (taken over) already, and its user pauses it with kubegray.io/paused instead.
			k.u.must("create", "-f", k.webManifest("nginx:1.25", false))
			k.u.must("rollout", "status", "deployment/web", "--timeout=60s")
			k.u.must("rollout", "pause", "deployment/web")
			k.u.must("annotate", "deployment/web", grayapi.PercentAnnotation+"=20")
			k.u.must("set", "image", "deployment/web", "app="+constructionImage)
			// Taken over with the user's pause saved: nothing moves.
			eventually(k.t, 30*time.Second, "user pause saved", func() (bool, string) {
				d := k.e.get("web")
				return d.Annotations[grayapi.PausedAnnotation] == "true" && d.Spec.Paused, fmt.Sprintf("%v", d.Annotations)
			})
			k.stillHeld(grayState{newSpec: 0, oldTotal: 10})
			k.resumeUserPause()
			k.e.expect("web", constructionHeld)
			k.finish(false)
		})

		run("held then user pause then kubectl rollout resume", func(k *constructionCase) {
			k.held()
			k.u.must("annotate", "deployment/web", grayapi.PausedAnnotation+"=true")
			k.stillHeld(constructionHeld)
			k.resumeUserPause()
			if _, paused := k.e.get("web").Annotations[grayapi.PausedAnnotation]; paused {
				k.t.Fatalf("%s still set after the user resumed", grayapi.PausedAnnotation)
			}
			k.e.expect("web", constructionHeld)
			k.stillHeld(constructionHeld)
			k.finish(false)
		})

		run("scale to 0 and back while held", func(k *constructionCase) {
			k.held()
			k.u.must("scale", "deployment/web", "--replicas=0")
			k.e.expect("web", grayState{phase: grayapi.PhaseHeld, paused: true})
			k.u.must("scale", "deployment/web", "--replicas=10")
			k.e.expect("web", constructionHeld)
			k.finish(false)
		})

		run("status write that removes the saved strategy", func(k *constructionCase) {
			k.held()
			k.u.fails(1, []string{"kubegray-guard", "the kubegray.io/strategy annotation holds the strategy it restores"},
				"patch", "deployment/web", "--subresource=status", "--type=json",
				"-p", `[{"op":"remove","path":"/metadata/annotations/kubegray.io~1strategy"}]`)
			k.stillHeld(constructionHeld)
			k.finish(false)
		})

		run("deleted with --cascade=orphan and created again", func(k *constructionCase) {
			k.held()
			k.u.must("delete", "deployment/web", "--cascade=orphan")
			manifest := k.webManifest(constructionImage, true)
			if k.eager {
				// Without the takeover policy a gray Deployment cannot be created plain: the
				// guard names the two ways, and the one that keeps the hold is taken.
				k.u.fails(1, []string{"kubegray-guard", "create it taken over: spec.paused true, spec.strategy {type: Recreate}"}, "create", "-f", manifest)
				manifest = k.webManifest(constructionImage, true, testutil.WithPaused(), testutil.WithRecreate(),
					testutil.WithAnnotation(grayapi.StrategyAnnotation, "RollingUpdate;maxSurge=1;maxUnavailable=0"))
			}
			k.u.must("create", "-f", manifest)
			k.e.expect("web", constructionHeld)
			k.stillHeld(constructionHeld)
			k.finish(false)
		})

		run("stable replica set deleted while held", func(k *constructionCase) {
			k.held()
			// The stable revision is 1, unless the built-in controller's revision bookkeeping,
			// syncing a cached Deployment older than the new image, made the stable replica set new
			// again and then the canary (1 → 3, 2 → 4: seen on 1.35 in eager mode). Either way the
			// status names the stable replica set's revision as it stands.
			stable := k.stable()
			rev := stable.Annotations[deployutil.RevisionAnnotation]
			k.u.must("delete", "replicaset", stable.Name)
			k.e.expect("web", grayState{phase: grayapi.PhaseDegraded, newSpec: 2, paused: true})
			k.stillHeld(grayState{newSpec: 2})
			if st := k.e.grayStatus(k.e.get("web")); st.Failure == nil || st.Failure.Reason != grayapi.ReasonStableReplicaSetGone ||
				!strings.Contains(st.Message, "the replica set of stable revision "+rev+" is gone") {
				k.t.Fatalf("status %+v, want Degraded because stable revision %s is gone", st, rev)
			}
			k.u.fails(1, []string{"the replica set of its stable revision " + rev + " is gone (deleted), so there is nothing to roll back to",
				"kubectl gray resume web --full"}, "gray", "undo", "web")
			k.finish(false)
		})

		run("frozen label removed from a held replica set, then a resize", func(k *constructionCase) {
			k.held()
			rs := k.stableReplicaSet()
			ns := k.e.ns
			// Removed or changed, by kubectl label or by a patch of the labels alone.
			for _, args := range [][]string{
				{"label", "replicaset", rs, grayapi.FrozenLabel + "-"},
				{"label", "replicaset", rs, "--overwrite", grayapi.FrozenLabel + "=false"},
				{"patch", "replicaset", rs, "--type=merge", "-p", `{"metadata":{"labels":{"` + grayapi.FrozenLabel + `":null}}}`},
			} {
				k.u.fails(1, []string{"kubegray-freeze", "replica set " + ns + "/" + rs + " of deployment web",
					"only gray-controller adds or removes the kubegray.io/frozen label",
					`"kubectl gray resume web -n ` + ns + ` --full"`, `"kubectl scale deployment web -n ` + ns + ` --replicas=N"`}, args...)
			}
			// Still frozen, so the resize meant to follow is refused (the recorder fails the
			// test on any resize of a frozen ReplicaSet by anyone but gray-controller).
			k.u.fails(1, []string{"kubegray-freeze", "only gray-controller sizes its replica sets"},
				"patch", "replicaset", rs, "--type=merge", "-p", `{"spec":{"replicas":10}}`)
			// Other labels stay the users'.
			k.u.must("label", "replicaset", rs, "kubegray.test/touched=yes")
			for _, r := range ownedReplicaSets(k.t, k.e.client, k.e.get("web")) {
				if _, frozen := r.Labels[grayapi.FrozenLabel]; !frozen {
					k.t.Errorf("replica set %s lost %s", r.Name, grayapi.FrozenLabel)
				}
			}
			k.stillHeld(constructionHeld)
			k.finish(false)
		})

		run("aborted label set by hand", func(k *constructionCase) {
			k.held()
			var canary string
			for _, rs := range ownedReplicaSets(k.t, k.e.client, k.e.get("web")) {
				if imageOf(&rs.Spec.Template) == constructionImage {
					canary = rs.Name
				}
			}
			k.u.fails(1, []string{"kubegray-freeze", "replica set " + k.e.ns + "/" + canary + " of deployment web",
				"only gray-controller sets or removes the kubegray.io/aborted label",
				`"kubectl annotate deployment web -n ` + k.e.ns + ` kubegray.io/resume=2:abort"`},
				"label", "replicaset", canary, grayapi.AbortedLabel+"=2")
			k.stillHeld(constructionHeld)
			k.finish(false)
			// Once released (thawed, with the takeover policy) the label is still gray-controller's.
			k.u.fails(1, []string{"kubegray-freeze", "only gray-controller sets or removes the kubegray.io/aborted label"},
				"label", "replicaset", canary, grayapi.AbortedLabel+"=2")
		})

		run("forged status while held and after the rollout", func(k *constructionCase) {
			k.held()
			ns := k.e.ns
			refusal := []string{"kubegray-guard",
				"deployment " + ns + "/web: the kubegray.io/status annotation is gray-controller's report of the gray rollout, and only gray-controller writes it",
				`"kubectl gray resume web -n ` + ns + `"`}
			before := k.e.grayStatus(k.e.get("web"))
			forged := `{"phase":"Complete","revision":2,"stableRevision":2,"percent":100}`
			k.u.fails(1, refusal, "annotate", "deployment/web", "--overwrite", grayapi.StatusAnnotation+"="+forged)
			k.u.fails(1, refusal, "annotate", "deployment/web", grayapi.StatusAnnotation+"-")
			k.u.fails(1, refusal, "patch", "deployment/web", "--subresource=status", "--type=merge",
				"-p", `{"metadata":{"annotations":{"`+grayapi.StatusAnnotation+`":"{}"}}}`)
			if after := k.e.grayStatus(k.e.get("web")); after.Phase != before.Phase || after.Revision != before.Revision || after.Step != before.Step {
				k.t.Fatalf("status moved from %+v to %+v", before, after)
			}
			k.stillHeld(constructionHeld)
			k.finish(false)
			// Between rollouts too, whether or not the Deployment stays taken over.
			k.u.fails(1, refusal, "annotate", "deployment/web", grayapi.StatusAnnotation+"-")
		})

		if !eager {
			// kubectl rollout undo refuses a paused Deployment, and eager keeps every annotated
			// one paused: this path exists with the takeover policy only.
			run("stale user pause brought back by kubectl rollout undo", func(k *constructionCase) {
				k.held()
				// The built-in controller copies the user's pause onto the canary's ReplicaSet.
				k.u.must("annotate", "deployment/web", grayapi.PausedAnnotation+"=true")
				eventually(k.t, 30*time.Second, "the pause copied onto the canary", func() (bool, string) {
					for _, rs := range ownedReplicaSets(k.t, k.e.client, k.e.get("web")) {
						if imageOf(&rs.Spec.Template) == constructionImage && rs.Annotations[grayapi.PausedAnnotation] == "true" {
							return true, ""
						}
					}
					return false, "not yet"
				})
				k.u.must("annotate", "deployment/web", grayapi.PausedAnnotation+"-")
				k.finish(false)
				k.u.must("set", "image", "deployment/web", "app=nginx:1.27")
				k.e.expect("web", constructionHeld)
				k.finish(false)
				// Back to the canary's revision, whose ReplicaSet carries the stale pause.
				k.u.must("rollout", "undo", "deployment/web")
				k.e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
				if _, paused := k.e.get("web").Annotations[grayapi.PausedAnnotation]; paused {
					k.t.Fatalf("the stale %s came back as a user pause", grayapi.PausedAnnotation)
				}
				k.finish(false)
			})
		}
	})

	// Not in parallel: each stops or adds controllers that every case shares.
	t.Run("another identity than the policies exempt refuses to start", func(t *testing.T) {
		wantRefusedToStartAs(t, c, "impostor", eager,
			`gray-controller runs as "system:serviceaccount:gray-system:impostor"`,
			"exempts another user (match condition not-gray-controller: request.userInfo.username != 'system:serviceaccount:gray-system:gray-controller')")
	})
	if !eager {
		// An uninstall the API server has taken in part: the guard is gone while the takeover
		// policy still acts (kube-apiserver drops deleted policies asynchronously, each on its
		// own). The takeover policy keeps a taken-over Deployment on Recreate when someone sets
		// its strategy; a release that unpaused in the same write would leave it unpaused on
		// Recreate, and the built-in controller would kill every old pod at once.
		t.Run("kubectl gray release while the takeover policy outlives the guard", func(t *testing.T) {
			k := newConstructionCase(t, c, "release-half", false)
			k.held()
			if err := c.StopComponent(grayControllerName, 10*time.Second); err != nil {
				t.Fatal(err)
			}
			policies := alongsidePolicies(overlayManifests(t, "alongside"))
			deleteManifests(t, c, policyDocs(policies, "ValidatingAdmissionPolicy"))
			eventually(t, 30*time.Second, "kubectl gray release refused for the takeover policy, no longer by the guard", func() (bool, string) {
				res := k.u.kubectl("gray", "release", "web")
				return res.code != 0 && strings.Contains(res.stderr, "kubegray-takeover") && strings.Contains(res.stderr, "nothing was unpaused"), res.String()
			})
			d := k.e.get("web")
			if !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Fatalf("after the refused release: paused %t strategy %s, want paused on Recreate", d.Spec.Paused, d.Spec.Strategy.Type)
			}
			k.e.expect("web", grayState{phase: grayapi.PhaseHeld, newSpec: 2, oldTotal: 8, paused: true})
			deleteManifests(t, c, policyDocs(policies, "MutatingAdmissionPolicy"))
			eventually(t, 30*time.Second, "kubectl gray release once the takeover policy is gone", func() (bool, string) {
				res := k.u.kubectl("gray", "release", "web")
				return res.code == 0, res.String()
			})
			waitRolledOut(t, k.e.client, k.e.ns, "web", 60*time.Second)
			k.e.expect("web", grayState{newSpec: 10})
			applyManifests(t, c, policies)
			startAlongsideController(t, c)
		})
	}
	t.Run("uninstalled while held, then kubectl gray release", func(t *testing.T) {
		k := newConstructionCase(t, c, "release", eager)
		k.held()
		k.u.fails(1, []string{"refused by an admission policy", "kubegray-guard", "gray-controller releases the Deployment itself"},
			"gray", "release", "web")
		if err := c.StopComponent(grayControllerName, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		overlay := "alongside"
		if eager {
			overlay = "alongside-eager"
		}
		deleteManifests(t, c, alongsidePolicies(overlayManifests(t, overlay)))
		// The API server drops a deleted policy within a second or so.
		var out string
		eventually(t, 30*time.Second, "kubectl gray release once the policies are gone", func() (bool, string) {
			res := k.u.kubectl("gray", "release", "web")
			out = res.stdout
			return res.code == 0, res.String()
		})
		if !strings.Contains(out, "released (strategy RollingUpdate;maxSurge=1;maxUnavailable=0 restored, unpaused)") {
			t.Fatalf("kubectl gray release said %q", out)
		}
		k.wantThawed()
		// The built-in controller finishes the rollout it was handed.
		waitRolledOut(t, k.e.client, k.e.ns, "web", 60*time.Second)
		k.e.expect("web", grayState{newSpec: 10})
		applyManifests(t, c, alongsidePolicies(overlayManifests(t, overlay)))
		if eager {
			startAlongsideController(t, c, "--takeover=eager")
		} else {
			startAlongsideController(t, c)
		}
		// Opted in still (release keeps kubegray.io/percent): eager takes it over again.
		k.e.expect("web", grayState{phase: grayapi.PhaseComplete, newSpec: 10, paused: eager})
	})
}

// resumeUserPause ends the user's pause the way each overlay allows: `kubectl rollout resume`
// with the takeover policy, which turns it into the removal of kubegray.io/paused; without it
// the guard refuses the unpause and names the annotation to remove.
func (k *constructionCase) resumeUserPause() {
	k.t.Helper()
	if !k.eager {
		k.u.must("rollout", "resume", "deployment/web")
		d := k.e.get("web")
		if !d.Spec.Paused || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			k.t.Fatalf("kubectl rollout resume undid the takeover: paused %t strategy %s", d.Spec.Paused, d.Spec.Strategy.Type)
		}
		return
	}
	k.u.fails(1, []string{"kubegray-guard", "paused by its user (kubegray.io/paused)",
		"kubectl annotate deployment web -n " + k.e.ns + " kubegray.io/paused-"}, "rollout", "resume", "deployment/web")
	k.u.must("annotate", "deployment/web", grayapi.PausedAnnotation+"-")
}

// deleteManifests deletes documents with the admin kubeconfig, as a user uninstalling does.
func deleteManifests(t *testing.T, c *cluster.Cluster, docs []string) {
	t.Helper()
	cmd := exec.Command("kubectl", "--kubeconfig="+c.Kubeconfig, "delete", "-f", "-")
	cmd.Stdin = strings.NewReader(strings.Join(docs, "\n---\n"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl delete: %v\n%s", err, out)
	}
}

// wantRefusedToStartAs runs gray-controller in alongside mode as the ServiceAccount
// gray-system/name, with gray-controller's own RBAC bound to it, and wants it to exit with an
// error saying each of want.
func wantRefusedToStartAs(t *testing.T, c *cluster.Cluster, name string, eager bool, want ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, role := range []string{"gray-controller", "gray-controller-cluster"} {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + "-" + name},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "gray-system", Name: name}},
		}
		if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--mode=alongside", "--leader-elect=false", "--kubeconfig=" + impersonatingKubeconfig(t, c, "system:serviceaccount:gray-system:"+name),
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}
	if eager {
		args = append(args, "--takeover=eager")
	}
	out, err := exec.CommandContext(ctx, ourBinary(t, "gray-controller"), args...).CombinedOutput()
	if ctx.Err() != nil || err == nil {
		t.Fatalf("gray-controller did not refuse to start (err %v, context %v):\n%s", err, ctx.Err(), out)
	}
	for _, w := range want {
		if !strings.Contains(string(out), w) {
			t.Fatalf("gray-controller refused to start without saying %q:\n%s", w, out)
		}
	}
}

// reportRefusals reads the API server's audit log for the writes an admission policy refused
// in namespace ns: it fails on one of gray-controller's own (the policies must exempt it), and
// logs on one greppable line what the built-in controller did (docs/design.md cites it): its
// refused writes, over how long, how many Deployment status writes it made in that time, and how
// many lines of its log (at its default verbosity) say that the freeze refused it.
func reportRefusals(t *testing.T, c *cluster.Cluster, ns string) {
	t.Helper()
	data, err := os.ReadFile(c.AuditLog())
	if err != nil {
		t.Error(err)
		return
	}
	type auditEvent struct {
		Stage          string    `json:"stage"`
		Verb           string    `json:"verb"`
		UserAgent      string    `json:"userAgent"`
		StageTimestamp time.Time `json:"stageTimestamp"`
		ObjectRef      struct {
			Resource, Subresource, Namespace string
		} `json:"objectRef"`
		ResponseStatus struct {
			Code int `json:"code"`
		} `json:"responseStatus"`
	}
	var builtin []auditEvent
	refused := map[string]int{}
	var first, last time.Time
	for _, line := range strings.Split(string(data), "\n") {
		var ev auditEvent
		if line == "" || json.Unmarshal([]byte(line), &ev) != nil || ev.Stage != "ResponseComplete" || ev.ObjectRef.Namespace != ns {
			continue
		}
		writer, _, _ := strings.Cut(ev.UserAgent, "/")
		if ev.ResponseStatus.Code == 403 && writer == grayControllerName {
			t.Errorf("an admission policy refused gray-controller's %s of %s in %s", ev.Verb, ev.ObjectRef.Resource, ns)
		}
		if writer != "kube-controller-manager" {
			continue
		}
		builtin = append(builtin, ev)
		if ev.ResponseStatus.Code != 403 {
			continue
		}
		refused[ev.Verb+" "+ev.ObjectRef.Resource]++
		if first.IsZero() {
			first = ev.StageTimestamp
		}
		last = ev.StageTimestamp
	}
	statusWrites := 0
	for _, ev := range builtin {
		if ev.ObjectRef.Resource == "deployments" && ev.ObjectRef.Subresource == "status" && ev.ResponseStatus.Code < 300 &&
			!ev.StageTimestamp.Before(first) && !ev.StageTimestamp.After(last) {
			statusWrites++
		}
	}
	logLines, firstLine := 0, ""
	if kcm, err := os.ReadFile(filepath.Join(c.Dir, "kube-controller-manager.log")); err == nil {
		for _, line := range strings.Split(string(kcm), "\n") {
			if strings.Contains(line, ns+"/") && strings.Contains(line, "kubegray-freeze") {
				if logLines == 0 {
					firstLine = line
				}
				logLines++
			}
		}
	}
	t.Logf("BUILTIN-REFUSED namespace=%s writes=%v over=%s statusWritesMeanwhile=%d logLines=%d %s", ns, refused,
		last.Sub(first).Round(time.Millisecond), statusWrites, logLines, firstLine)
}
