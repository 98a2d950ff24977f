package plugin

// What the dashboard's pages show: the status view `kubectl gray status` prints, with the
// actions the verbs would accept now and, for one rollout, its whole gray timeline and the
// canary's share over time.

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/deployutil"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// rolloutRow is one row of the list page.
type rolloutRow struct {
	StatusView
	// Actions are the ones the verbs would accept now; none in read-only mode.
	Actions []actionOffer `json:"actions"`
}

// rolloutDetail is the rollout page.
type rolloutDetail struct {
	StatusView
	Actions []actionOffer `json:"actions"`
	// Timeline is every gray event the cluster still keeps about the Deployment, oldest first.
	Timeline []EventView `json:"timeline"`
	// Share is the canary's share of the replicas over time (shareSeries).
	Share []sharePoint `json:"share"`
	// StatusText is the status as `kubectl gray status DEPLOYMENT` prints it, without colour.
	StatusText string `json:"statusText"`
}

// actionOffer is an action the page offers, and the confirmation it asks for.
type actionOffer struct {
	// Name is the path element of the action's request: resume, resume-full, abort, retry, undo.
	Name string `json:"name"`
	// Label is the button's text, Confirm what the confirmation says the action does.
	Label   string `json:"label"`
	Confirm string `json:"confirm"`
}

// The actions of the page, each the core of one verb.
const (
	actionResume     = "resume"
	actionResumeFull = "resume-full"
	actionAbort      = "abort"
	actionRetry      = "retry"
	actionUndo       = "undo"
)

// newRolloutRow is the list page's row of d: its status view without revisions and events,
// with the available pods of its new ReplicaSet.
func newRolloutRow(d *appsv1.Deployment, rss []*appsv1.ReplicaSet, readOnly bool) rolloutRow {
	v := newStatusView(d, nil)
	var newAvailable int32
	if newRS := deployutil.FindNewReplicaSet(d, rss); newRS != nil {
		newAvailable = newRS.Status.AvailableReplicas
	}
	v.NewAvailableReplicas = &newAvailable
	row := rolloutRow{StatusView: v, Actions: []actionOffer{}}
	if !readOnly {
		row.Actions = offeredActions(d, rss)
	}
	return row
}

// newRolloutDetail is the rollout page of d; record notes the view's share as seen live and
// returns the samples seen while the server ran.
func newRolloutDetail(d *appsv1.Deployment, rel *related, record func(StatusView) []sharePoint, readOnly bool, now time.Time) rolloutDetail {
	v := newStatusView(d, rel)
	var text strings.Builder
	if err := renderStatus(&text, v, now, false); err != nil {
		text.WriteString(err.Error())
	}
	detail := rolloutDetail{
		StatusView: v,
		Actions:    []actionOffer{},
		Timeline:   grayEventViews(d, rel.events),
		Share:      shareSeries(d, rel.replicaSets, rel.events, record(v)),
		StatusText: text.String(),
	}
	if detail.Timeline == nil {
		detail.Timeline = []EventView{}
	}
	if !readOnly {
		detail.Actions = offeredActions(d, rel.replicaSets)
	}
	return detail
}

// offeredActions are the actions whose verb would write a request for d as the cache shows
// it: each is decided by the very function the verb runs (resumeRequest, abortRequest,
// retryRequest, the rollback's target), so the page offers what the command accepts, and for
// a request that is what gray-controller's status says it serves. The write itself decides
// again on the live object.
func offeredActions(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []actionOffer {
	newRS := deployutil.FindNewReplicaSet(d, rss)
	templateRevision := func() (int64, bool, error) { return replicaSetRevision(newRS) }
	offers := []actionOffer{}
	if req, next, err := resumeRequest(d, templateRevision, false); err == nil && next < grayapi.FullPercent {
		offers = append(offers, actionOffer{Name: actionResume, Label: fmt.Sprintf("Resume to %d%%", next),
			Confirm: fmt.Sprintf("Let revision %d of %s go on from its hold to the next hold point, %d%%.", req.Revision, d.Name, next)})
	}
	if req, _, err := resumeRequest(d, templateRevision, true); err == nil {
		offers = append(offers, actionOffer{Name: actionResumeFull, Label: "Resume to 100%",
			Confirm: fmt.Sprintf("Roll revision %d of %s out to all replicas, skipping the remaining hold points.", req.Revision, d.Name)})
	}
	if req, stable, err := abortRequest(d, templateRevision); err == nil {
		offers = append(offers, actionOffer{Name: actionAbort, Label: "Abort",
			Confirm: fmt.Sprintf("Abort revision %d of %s: its canary goes to 0 and stable revision %d back to all %d replicas; the template stays as written.", req.Revision, d.Name, stable, replicasOf(d))})
	}
	if req, first, err := retryRequest(d, templateRevision); err == nil {
		offers = append(offers, actionOffer{Name: actionRetry, Label: "Retry",
			Confirm: fmt.Sprintf("Start the aborted revision %d of %s again, from its first hold point, %d%%.", req.Revision, d.Name, first)})
	}
	if target, err := undoTarget(d, 0); err == nil {
		if rs, err := replicaSetOfRevision(d, rss, target, true); err == nil && !deployutil.EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			offers = append(offers, actionOffer{Name: actionUndo, Label: fmt.Sprintf("Undo to revision %d", target),
				Confirm: fmt.Sprintf("Write the pod template of stable revision %d (%s) back into %s; gray-controller rolls back without holding.", target, formatImages(templateImages(&rs.Spec.Template.Spec)), d.Name)})
		}
	}
	return offers
}
