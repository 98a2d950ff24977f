package plugin

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

func TestShareSeries(t *testing.T) {
	d := deployment("web", testutil.WithRevision(2))
	stable := replicaSet(d, "1", "old", "nginx:1.25", 8, 8, time.Hour)
	canary := replicaSet(d, "2", "new", "nginx:1.26", 2, 2, 30*time.Minute)
	other := deployment("web")
	other.UID = "uid-of-an-earlier-web"
	live := func(at time.Duration, share float64) sharePoint {
		return sharePoint{At: ago(at), Share: share, Source: "live"}
	}
	type point struct {
		ago   time.Duration
		share float64
	}
	tests := []struct {
		name   string
		events []*corev1.Event
		live   []sharePoint
		want   []point
	}{
		{name: "the new ReplicaSet's creation alone", want: []point{{30 * time.Minute, 0}}},
		{name: "held twice, then seen live",
			events: []*corev1.Event{
				grayEvent(d, "h2", "Normal", grayapi.ReasonGrayHeld, "web-new holds 5/10 (50%), all 5 available", 1, 10*time.Minute),
				grayEvent(d, "h1", "Normal", grayapi.ReasonGrayHeld, "web-new holds 2/10 (20%), all 2 available", 1, 20*time.Minute),
			},
			live: []sharePoint{live(5*time.Minute, 70)},
			want: []point{{30 * time.Minute, 0}, {20 * time.Minute, 20}, {10 * time.Minute, 50}, {5 * time.Minute, 70}}},
		{name: "complete and aborted",
			events: []*corev1.Event{
				grayEvent(d, "c", "Normal", grayapi.ReasonGrayComplete, "Revision 2 complete: all 10 replicas updated", 1, 10*time.Minute),
				grayEvent(d, "a", "Warning", grayapi.ReasonGrayAborted, "revision 2 aborted", 1, 5*time.Minute),
			},
			want: []point{{30 * time.Minute, 0}, {10 * time.Minute, 100}, {5 * time.Minute, 0}}},
		{name: "what came before the new ReplicaSet, of another ReplicaSet or revision, or says no share, is left out",
			events: []*corev1.Event{
				grayEvent(d, "old", "Normal", grayapi.ReasonGrayHeld, "web-new holds 2/10 (20%), all 2 available", 1, 40*time.Minute),
				grayEvent(d, "rs", "Normal", grayapi.ReasonGrayHeld, "web-old holds 2/10 (20%), all 2 available", 1, 20*time.Minute),
				grayEvent(d, "rev", "Normal", grayapi.ReasonGrayComplete, "Revision 1 complete: all 10 replicas updated", 1, 20*time.Minute),
				grayEvent(other, "uid", "Normal", grayapi.ReasonGrayHeld, "web-new holds 2/10 (20%), all 2 available", 1, 20*time.Minute),
				grayEvent(d, "resumed", "Normal", grayapi.ReasonGrayResumed, "resumed to 50%", 1, 15*time.Minute),
			},
			live: []sharePoint{live(45*time.Minute, 100)},
			want: []point{{30 * time.Minute, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var events []corev1.Event
			for _, e := range tt.events {
				events = append(events, *e)
			}
			var got []point
			for _, p := range shareSeries(d, []*appsv1.ReplicaSet{stable, canary}, events, tt.live) {
				got = append(got, point{now.Sub(p.At.Time), p.Share})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Live samples are noted only when the share changes, and each caller gets its own copy.
func TestLiveSharesRecord(t *testing.T) {
	l := newLiveShares()
	view := func(available int32) StatusView {
		return StatusView{Replicas: 10, NewAvailableReplicas: &available}
	}
	l.record("uid", view(2), now)
	l.record("uid", view(2), now.Add(time.Second))
	got := l.record("uid", view(5), now.Add(2*time.Second))
	want := []sharePoint{
		{At: metav1.NewTime(now), Share: 20, Source: "live"},
		{At: metav1.NewTime(now.Add(2 * time.Second)), Share: 50, Source: "live"},
	}
	if !slices.EqualFunc(got, want, func(a, b sharePoint) bool { return a.At.Equal(&b.At) && a.Share == b.Share }) {
		t.Errorf("got %v, want %v", got, want)
	}
	got[0].Share = 99
	if again := l.record("uid", view(5), now.Add(3*time.Second)); again[0].Share != 20 {
		t.Errorf("a caller's change reached the store: %v", again)
	}
}
