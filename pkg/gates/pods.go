package gates

import (
	"fmt"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// Pod is what the pods gate reads of one pod: the summary of its health the controller's pod
// cache keeps (and little else) for every pod.
type Pod = podhealth.Pod

// PodsStats is what the pods gate measured of one revision's pods over the window; a
// condition reads its fields by their JSON names (canary.restartsPerPod).
type PodsStats struct {
	// Pods counts the revision's pods.
	Pods int64 `json:"pods"`
	// Restarts counts container restarts inside the window, RestartsPerPod per pod (0 without
	// pods), which is what compares revisions of different sizes.
	Restarts       int64   `json:"restarts"`
	RestartsPerPod float64 `json:"restartsPerPod"`
	// OOMKills counts pods with a container OOMKilled inside the window.
	OOMKills int64 `json:"oomKills"`
	// CrashLooping counts pods with a container in CrashLoopBackOff now.
	CrashLooping int64 `json:"crashLooping"`
	// ReadinessFlaps counts pods whose readiness changed inside the window (every canary pod was
	// ready when it opened), NotReady those not ready now.
	ReadinessFlaps int64 `json:"readinessFlaps"`
	NotReady       int64 `json:"notReady"`
	// FailedPods counts Failed pods (evicted, or failed for good).
	FailedPods int64 `json:"failedPods"`
}

// TotalRestarts sums the restarts of pods: the baseline a window starts from.
func TotalRestarts(pods []Pod) int64 {
	var n int64
	for _, p := range pods {
		n += p.Restarts
	}
	return n
}

// CountPods measures pods over the window that opened at since, when they had baseline
// restarts in all. A pod deleted since then takes its restarts with it, so the count is never
// below 0 but may miss those.
func CountPods(pods []Pod, since time.Time, baseline int64) PodsStats {
	s := PodsStats{Pods: int64(len(pods)), Restarts: max(TotalRestarts(pods)-baseline, 0)}
	for _, p := range pods {
		if !p.LastOOMKill.Before(since) {
			s.OOMKills++
		}
		if p.CrashLooping {
			s.CrashLooping++
		}
		if p.ReadyChanged.After(since) {
			s.ReadinessFlaps++
		}
		if !p.Ready {
			s.NotReady++
		}
		if p.Failed {
			s.FailedPods++
		}
	}
	if s.Pods > 0 {
		s.RestartsPerPod = float64(s.Restarts) / float64(s.Pods)
	}
	return s
}

// String is the stats as a status line shows them.
func (s PodsStats) String() string {
	return fmt.Sprintf("%d pods, %d restarts (%.2f/pod), %d OOMKilled, %d crash-looping, %d readiness changes, %d failed",
		s.Pods, s.Restarts, s.RestartsPerPod, s.OOMKills, s.CrashLooping, s.ReadinessFlaps, s.FailedPods)
}
