package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
	"github.com/kubegray/kubectl-gray/test/cluster"
)

// The stand-in kubelet's node, where gray-controller's pods run as processes of this machine,
// and the images of the versions a test upgrades through (all our build: a version's faults
// come from its flags).
const (
	selfNode          = "gray-controller-node"
	selfNS            = "gray-system"
	selfName          = "gray-controller"
	releasedImage     = "ghcr.io/kubegray/gray-controller:v0.1.0"
	nextImage         = "ghcr.io/kubegray/gray-controller:v0.2.0"
	exitsLeadingImg   = "ghcr.io/kubegray/gray-controller:v0.3.0-exits-once-elected"
	crashesAtStartImg = "ghcr.io/kubegray/gray-controller:v0.3.1-crashes-at-start"
	fixedImage        = "ghcr.io/kubegray/gray-controller:v0.3.2"
)

// TestInsteadSelfUpgrade runs instead mode as a user does: manifests/instead applied while the
// built-in deployment controller still runs (it rolls gray-controller's Deployment out; the pods
// refuse to start beside it), then kube-controller-manager restarted without it, and
// gray-controller, as pods of its own Deployment on the stand-in kubelet's node, takes over every
// Deployment. Then it upgrades itself three times, a plain Deployment of the cluster rolled out
// after each to show that a controller leads:
//
//   - to a good version: the upgrade holds at one new pod of two, the new version leads while the
//     upgrade gate judges it (handed the lease by the old leader, or given it when the scale-down
//     removed the leader's pod), passes, and completes;
//   - to one that exits once elected (--test-exit-once-elected): it is handed the lease, exits,
//     restarts, an old replica leads again, and the gate or the progress deadline aborts the
//     upgrade: the old version at two pods, leading, the Deployment's template still the new one
//     (what Git and Helm asked for);
//   - to one that crashes at start (a flag it does not know): its pod never becomes ready, the
//     old version leads throughout, and the progress deadline aborts the upgrade;
//   - then to a fixed version, the recovery docs/operations.md gives: it completes as the first.
//
// For speed the test shortens what an operator would leave alone: the built-in-controller check's
// window (15 s), the upgrades' progress deadline (30 s), the gate's interval (5 s, count 3) and
// hold-for (10 s).
func TestInsteadSelfUpgrade(t *testing.T) {
	// Mostly waiting (on leases, back-offs and gate intervals): it runs beside the other suites.
	t.Parallel()
	c := cluster.StartForTest(t, cluster.Options{})
	ctx := context.Background()
	bin := ourBinary(t, "gray-controller")
	// The stand-in kubelet's log and its pods' are in the component logs of a failed test.
	if _, err := c.StartKubelet(ctx, cluster.KubeletOptions{Node: selfNode, Images: map[string]string{
		releasedImage: bin, nextImage: bin, exitsLeadingImg: bin, crashesAtStartImg: bin, fixedImage: bin}}); err != nil {
		t.Fatal(err)
	}

	applyManifests(t, c, selfHostedManifests(t, releasedImage))
	eventually(t, time.Minute, "the built-in controller to start gray-controller's pods, which refuse to run beside it", func() (bool, string) {
		pods := selfPods(t, c)
		refused := 0
		for _, p := range pods {
			if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount > 0 {
				refused++
			}
		}
		return refused == 2, fmt.Sprintf("%d pods, %d restarted", len(pods), refused)
	})
	if err := c.RestartControllerManager(ctx, cluster.WithoutDeploymentController); err != nil {
		t.Fatal(err)
	}
	first := waitSelfSettled(t, c, releasedImage, grayapi.PhaseComplete, 3*time.Minute)
	t.Logf("installed: %s leads", first)

	web := testutil.Deployment("web", testutil.WithReplicas(3), testutil.WithImage("v1"))
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, c.Client, "default", "web", time.Minute)

	t.Run("to a good version", func(t *testing.T) {
		applyManifests(t, c, selfHostedManifests(t, nextImage))
		eventually(t, time.Minute, "a pod of the new version to lead while the upgrade is held", func() (bool, string) {
			st := selfStatus(t, c)
			_, leader := selfLeader(t, c)
			return st.HeldAt != nil && leader == nextImage, fmt.Sprintf("phase %s, leader runs %s", st.Phase, leader)
		})
		logHandOver(t, c)
		leader := waitSelfSettled(t, c, nextImage, grayapi.PhaseComplete, 2*time.Minute)
		t.Logf("upgraded: %s leads", leader)
		rollWeb(t, c, "v2")
	})

	t.Run("to a version that exits once elected", func(t *testing.T) {
		applyManifests(t, c, selfHostedManifests(t, exitsLeadingImg, "--test-exit-once-elected"))
		eventually(t, 2*time.Minute, "the new version to lead, and exit", func() (bool, string) {
			restarts := canaryRestarts(t, c, exitsLeadingImg)
			return restarts > 0, fmt.Sprintf("its pods restarted %d times", restarts)
		})
		logHandOver(t, c)
		leader := waitSelfSettled(t, c, nextImage, grayapi.PhaseAborted, 3*time.Minute)
		st := selfStatus(t, c)
		if st.Failure == nil {
			t.Fatalf("aborted with no failure recorded: %+v", st)
		}
		t.Logf("aborted (%s: %s); %s leads", st.Failure.Reason, st.Failure.Message, leader)
		rollWeb(t, c, "v3")
	})

	t.Run("to a version that crashes at start", func(t *testing.T) {
		applyManifests(t, c, selfHostedManifests(t, crashesAtStartImg, "--no-such-flag"))
		var ledBy []string
		eventually(t, 2*time.Minute, "the upgrade aborted, the old version leading throughout", func() (bool, string) {
			if _, img := selfLeader(t, c); img != "" && img != nextImage {
				ledBy = append(ledBy, img)
			}
			st := selfStatus(t, c)
			return st.Phase == grayapi.PhaseAborted, fmt.Sprintf("phase %s (%s)", st.Phase, st.Message)
		})
		if len(ledBy) > 0 {
			t.Errorf("the lease was held by pods of %q during the upgrade", ledBy)
		}
		leader := waitSelfSettled(t, c, nextImage, grayapi.PhaseAborted, time.Minute)
		st := selfStatus(t, c)
		if st.Failure == nil || st.Failure.Reason != grayapi.ReasonProgressDeadlineExceeded {
			t.Errorf("failure %+v, want %s: a canary that never became ready", st.Failure, grayapi.ReasonProgressDeadlineExceeded)
		}
		t.Logf("aborted (%s); %s leads", st.Failure.Reason, leader)
		rollWeb(t, c, "v4")
	})

	t.Run("then to a fixed version", func(t *testing.T) {
		applyManifests(t, c, selfHostedManifests(t, fixedImage))
		leader := waitSelfSettled(t, c, fixedImage, grayapi.PhaseComplete, 2*time.Minute)
		t.Logf("recovered: %s leads", leader)
		rollWeb(t, c, "v5")
	})
}

// selfHostedManifests renders manifests/instead with image and extra controller args, as an
// upgrade does (kustomize edit set image), and the test's edits: gray-controller's pods on the
// stand-in kubelet's node, and the shortened waits TestInsteadSelfUpgrade lists.
func selfHostedManifests(t *testing.T, image string, extraArgs ...string) []string {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", "../../manifests/instead").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize manifests/instead: %v", err)
	}
	var docs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		switch {
		case u.GetKind() == "Deployment" && u.GetName() == selfName:
			editSelfDeployment(t, &u, image, extraArgs)
		case u.GetKind() == "ConfigMap" && u.GetName() == "gray-controller-upgrade-gate":
			gate := "provider: pods\nsuccess: canary.restarts == 0 && canary.crashLooping == 0 && canary.notReady == 0\ninterval: 5s\ncount: 3\n"
			if err := unstructured.SetNestedField(u.Object, gate, "data", "gray-controller-upgrade"); err != nil {
				t.Fatal(err)
			}
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return docs
}

func editSelfDeployment(t *testing.T, u *unstructured.Unstructured, image string, extraArgs []string) {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
		t.Fatal(err)
	}
	if d.Annotations[grayapi.PercentAnnotation] != "50" || d.Annotations[grayapi.GatesAnnotation] != "gray-controller-upgrade" {
		t.Fatalf("manifests/instead's Deployment has annotations %v, want a gray upgrade at 50%% judged by gray-controller-upgrade", d.Annotations)
	}
	d.Annotations[grayapi.HoldForAnnotation] = "10s"
	if image != releasedImage {
		// Not at install: the built-in controller would find the bootstrap (pods refusing to run
		// beside it) past this deadline before gray-controller takes over.
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
	}
	spec := &d.Spec.Template.Spec
	spec.NodeSelector = map[string]string{corev1.LabelHostname: selfNode}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: cluster.StandInKubeletTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	ctr := &spec.Containers[0]
	ctr.Image = image
	ctr.Args = append(append(ctr.Args, "--builtin-check-window=15s"), extraArgs...)
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
	if err != nil {
		t.Fatal(err)
	}
	u.Object = obj
}

// selfPods lists gray-controller's pods that are not terminating.
func selfPods(t *testing.T, c *cluster.Cluster) []corev1.Pod {
	t.Helper()
	list, err := c.Client.CoreV1().Pods(selfNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + selfName})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

func selfStatus(t *testing.T, c *cluster.Cluster) grayapi.Status {
	t.Helper()
	d, err := c.Client.AppsV1().Deployments(selfNS).Get(context.Background(), selfName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := grayapi.ParseStatus(d.Annotations[grayapi.StatusAnnotation])
	return st
}

// selfLeader is the identity that holds the Lease and the image of its pod ("" when none holds
// it, or its pod is gone): an identity is the pod's name and a suffix (--pod-name).
func selfLeader(t *testing.T, c *cluster.Cluster) (identity, image string) {
	t.Helper()
	lease, err := c.Client.CoordinationV1().Leases(selfNS).Get(context.Background(), selfName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return "", ""
	}
	identity = *lease.Spec.HolderIdentity
	pod, _, _ := strings.Cut(identity, "_")
	p, err := c.Client.CoreV1().Pods(selfNS).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		return identity, ""
	}
	return identity, p.Spec.Containers[0].Image
}

// waitSelfSettled waits until gray-controller's Deployment is in phase with every pod of image
// ready and none of another, and a pod of image leads; it returns the leading pod's identity.
func waitSelfSettled(t *testing.T, c *cluster.Cluster, image string, phase grayapi.Phase, timeout time.Duration) string {
	t.Helper()
	var leader string
	eventually(t, timeout, fmt.Sprintf("gray-controller %s with its two pods of %s ready and leading", phase, image), func() (bool, string) {
		st := selfStatus(t, c)
		pods := selfPods(t, c)
		ready := 0
		var images []string
		for _, p := range pods {
			img := p.Spec.Containers[0].Image
			images = append(images, img)
			if img == image && podReady(&p) {
				ready++
			}
		}
		var leaderImage string
		leader, leaderImage = selfLeader(t, c)
		return st.Phase == phase && ready == 2 && len(pods) == 2 && leaderImage == image,
			fmt.Sprintf("phase %s (%s), pods %v (%d ready of %s), leader %q runs %q", st.Phase, st.Message, images, ready, image, leader, leaderImage)
	})
	return leader
}

// logHandOver says how the canary came to lead: handed the lease (the GrayLeaseHandedOver event),
// or otherwise: when the scale-down to the hold removes the old leader's pod, its lease is
// released then, and the canary may take it.
func logHandOver(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	events, err := c.Client.CoreV1().Events(selfNS).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + selfName + ",reason=" + grayapi.ReasonGrayLeaseHandedOver})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 {
		t.Logf("no %s event: the canary came to lead otherwise (the scale-down to the hold removed the old leader's pod)",
			grayapi.ReasonGrayLeaseHandedOver)
		return
	}
	t.Logf("hand-over: %s", events.Items[len(events.Items)-1].Message)
}

// canaryRestarts sums the restarts of gray-controller's pods of image: the version that exits
// once elected restarts only when it led.
func canaryRestarts(t *testing.T, c *cluster.Cluster, image string) int32 {
	t.Helper()
	var n int32
	for _, p := range selfPods(t, c) {
		if p.Spec.Containers[0].Image == image && len(p.Status.ContainerStatuses) == 1 {
			n += p.Status.ContainerStatuses[0].RestartCount
		}
	}
	return n
}

// rollWeb changes web's image and waits until it is rolled out: a Deployment controller leads.
func rollWeb(t *testing.T, c *cluster.Cluster, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image)
	if _, err := c.Client.AppsV1().Deployments("default").Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, c.Client, "default", "web", time.Minute)
}
