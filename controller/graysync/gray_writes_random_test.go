package graysync

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestGrayWritesPerSyncRandomized drives random rollouts through the harness (1–20 replicas, one
// to three hold points, new images, next and full, scaling events, aborts and retries) and counts
// each sync's writes by kind, the figure issue 50 asks for: how many kinds of write one sync makes
// beside its status. It pins what the design holds to: two Deployment writes at most (a hold left
// for a new template, and the hold its created canary reaches), one create at most, at most two
// status writes (the target recorded before a ReplicaSet write, and the report); and it logs the
// distribution (docs/design.md: one gray sync, step by step). Every kind of sync must be seen, or
// it looked at too little.
func TestGrayWritesPerSyncRandomized(t *testing.T) {
	r := rand.New(rand.NewPCG(20261206, 53))
	shapes := map[string]int{}
	syncs := 0
	for scenario := range 60 {
		replicas := 1 + r.Int32N(20)
		points := []string{"20", "10,50", "0,30,60", "50", "5,95"}[r.IntN(5)]
		w := startGray(t, testutil.GrayWeb(replicas, points))
		w.perSync = nil
		image := 2
		for range 6 {
			switch r.IntN(6) {
			case 0, 1:
				w.setImage(fmt.Sprintf("v%d", image))
				image++
			case 2:
				w.setAnnotation(grayapi.ResumeAnnotation, fmt.Sprintf("%d:next", w.status().Revision))
			case 3:
				w.setAnnotation(grayapi.ResumeAnnotation, fmt.Sprintf("%d:full", w.status().Revision))
			case 4:
				w.edit(func(d *appsv1.Deployment) { d.Spec.Replicas = new(1 + r.Int32N(20)) })
			case 5:
				w.setAnnotation(grayapi.ResumeAnnotation, fmt.Sprintf("%d:%s", w.status().Revision, []string{"abort", "retry"}[r.IntN(2)]))
			}
			w.settle()
		}
		for i, n := range w.perSync {
			syncs++
			shapes[n.shape()]++
			if n.deployment > 2 || n.created > 1 || n.status > 2 {
				t.Fatalf("scenario %d (R=%d, points %s), sync %d wrote %+v", scenario, replicas, points, i, n)
			}
		}
	}
	var lines []string
	for s, n := range shapes {
		lines = append(lines, fmt.Sprintf("%5d %s", n, s))
	}
	sort.Sort(sort.Reverse(sort.StringSlice(lines)))
	t.Logf("%d syncs by the kinds of write they made (status writes apart):\n%s", syncs, strings.Join(lines, "\n"))
	for _, kinds := range []string{"nothing", "create", "resize", "deployment"} {
		seen := false
		for s := range shapes {
			seen = seen || strings.Contains(s, kinds)
		}
		if !seen {
			t.Errorf("no sync made %q: %v", kinds, shapes)
		}
	}
}

// shape names the kinds of write n made besides its status writes, and how many status writes.
func (n syncWrites) shape() string {
	var kinds []string
	for _, k := range []struct {
		name  string
		count int
	}{{"deployment", n.deployment}, {"create", n.created}, {"resize", n.resized}, {"other", n.other}} {
		if k.count > 0 {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) == 0 {
		kinds = []string{"nothing"}
	}
	return fmt.Sprintf("%d kind(s): %s + %d status", len(kinds), strings.Join(kinds, "+"), n.status)
}
