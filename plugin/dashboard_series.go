package plugin

// The canary's share over time for the rollout page's chart: what the cluster still keeps
// (the new ReplicaSet's creation, gray-controller's events), then what the server saw live.

import (
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// sharePoint is the canary's share at one time: available pods of the new ReplicaSet as a
// percentage of the replicas.
type sharePoint struct {
	At    metav1.Time `json:"at"`
	Share float64     `json:"share"`
	// Source is where the point comes from: replicaset (the new ReplicaSet was created with
	// no pods), event (a gray event), live (the server saw it).
	Source string `json:"source"`
}

// heldMessage reads the pods a GrayHeld event says the canary holds: "web-7d9 holds 2/10
// (20%), all 2 available".
var heldMessage = regexp.MustCompile(`^(\S+) holds (\d+)/(\d+) `)

// shareSeries is the share of d's new ReplicaSet over time, oldest first, from the time that
// ReplicaSet was created:
//
//   - its creation: 0
//   - a GrayHeld event naming it, "holds T/R": 100*T/R
//   - a GrayComplete event of its revision: 100
//   - a GrayAborted or GrayRolledBack event: 0
//   - each live sample since its creation, as it was seen
//
// For example a ReplicaSet created at 10:00, held 2/10 at 10:01 and seen at 4/10 live at
// 10:03 gives (10:00, 0), (10:01, 20), (10:03, 40). Without a new ReplicaSet the series is
// the live samples alone.
func shareSeries(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, events []corev1.Event, live []sharePoint) []sharePoint {
	points := []sharePoint{}
	var since metav1.Time
	newRS := deployutil.FindNewReplicaSet(d, rss)
	if newRS != nil {
		since = newRS.CreationTimestamp
		points = append(points, sharePoint{At: since, Share: 0, Source: "replicaset"})
		rev, _ := deployutil.Revision(newRS)
		for _, e := range events {
			if e.InvolvedObject.UID != d.UID {
				continue
			}
			at := eventTime(e)
			if at.Before(&since) {
				continue
			}
			if share, ok := eventShare(e, newRS.Name, rev); ok {
				points = append(points, sharePoint{At: at, Share: share, Source: "event"})
			}
		}
	}
	for _, p := range live {
		if !p.At.Before(&since) {
			points = append(points, p)
		}
	}
	sort.SliceStable(points, func(i, j int) bool { return points[i].At.Before(&points[j].At) })
	return points
}

// eventShare is the share a gray event says the canary of ReplicaSet rsName (revision rev)
// has, if it says one.
func eventShare(e corev1.Event, rsName string, rev int64) (float64, bool) {
	switch e.Reason {
	case grayapi.ReasonGrayHeld:
		m := heldMessage.FindStringSubmatch(e.Message)
		if m == nil || m[1] != rsName {
			return 0, false
		}
		held, _ := strconv.Atoi(m[2])
		replicas, _ := strconv.Atoi(m[3])
		if replicas == 0 {
			return 0, false
		}
		return 100 * float64(held) / float64(replicas), true
	case grayapi.ReasonGrayComplete:
		return 100, revisionOfComplete(e.Message) == rev
	case grayapi.ReasonGrayAborted, grayapi.ReasonGrayRolledBack:
		return 0, true
	}
	return 0, false
}

// completeMessage reads the revision of a GrayComplete event: "Revision 3 complete: ...".
var completeMessage = regexp.MustCompile(`^Revision (\d+) complete`)

func revisionOfComplete(message string) int64 {
	m := completeMessage.FindStringSubmatch(message)
	if m == nil {
		return -1
	}
	rev, _ := strconv.ParseInt(m[1], 10, 64)
	return rev
}

// maxLiveSamples bounds the live samples kept per rollout: at one a second, over an hour of
// a page left open before the oldest are dropped.
const maxLiveSamples = 4000

// liveShares are the shares the server saw, per Deployment, while pages of it were open.
type liveShares struct {
	mu      sync.Mutex
	samples map[types.UID][]sharePoint
}

func newLiveShares() *liveShares {
	return &liveShares{samples: map[types.UID][]sharePoint{}}
}

// record notes v's share at now unless it is the share last noted, and returns the samples.
func (l *liveShares) record(uid types.UID, v StatusView, now time.Time) []sharePoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v.NewAvailableReplicas == nil || v.Replicas == 0 {
		return append([]sharePoint(nil), l.samples[uid]...)
	}
	share := 100 * float64(*v.NewAvailableReplicas) / float64(v.Replicas)
	s := l.samples[uid]
	if n := len(s); n == 0 || s[n-1].Share != share {
		s = append(s, sharePoint{At: metav1.NewTime(now), Share: share, Source: "live"})
		if len(s) > maxLiveSamples {
			s = s[len(s)-maxLiveSamples:]
		}
		l.samples[uid] = s
	}
	return append([]sharePoint(nil), s...)
}
