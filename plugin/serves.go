package plugin

// Whether gray-controller serves a request now: the one rule by which resume, abort and retry,
// and the dashboard's buttons through them, write a request or refuse it (issue 52: what the
// tools offer is what the controller serves).

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// refuseUnserved is nil when gray-controller serves r for the rollout st reports, and else the
// refusal. The caller has made sure st reports d's current template: serves is for the
// generation the status reports, and a request for a template not reported yet names a
// revision gray-controller drops.
//
// why is the verb's state-specific explanation of a refusal for st ("" when none fits): it
// says why and what to do, so a refusal uses it as its message, but it never decides, since a
// rule restated here would drift from the controller's own. Where no explanation fits, the
// refusal names what the controller serves instead.
//
// A status without serves was written by a gray-controller older than the list. For one
// release, why then decides as it did before the list existed: the explanations are exactly
// the rules that controller applied. Refusing outright until the controller is upgraded would
// leave a plugin upgraded first (krew and the cluster's release move separately) unable to
// resume any held rollout, with no way on but editing annotations by hand. The release after
// the one whose controller writes serves drops this fallback, refusing a status without it.
func refuseUnserved(d *appsv1.Deployment, st grayapi.Status, r grayapi.Request, why string) error {
	switch {
	case st.Serves == nil && why == "", st.Serves.Has(r):
		return nil
	case why != "":
		return errors.New(why)
	}
	return fmt.Errorf("deployment %s/%s: gray-controller does not serve %q now (%s); see 'kubectl gray status %s'",
		d.Namespace, d.Name, r, servesText(st.Serves), d.Name)
}

// servesText says what a status serves, for a refusal.
func servesText(s grayapi.Serves) string {
	if len(s) == 0 {
		return "it serves nothing"
	}
	return "it serves: " + s.String()
}
