package plugin

import (
	"context"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// requestOutcome is the kubegray.io/resume request a verb writes (resume, abort, retry), and
// what it prints: done when it wrote it, again when the same request stood already.
type requestOutcome struct {
	req         grayapi.Resume
	done, again string
}

// decideRequest decides the request for d as read; templateRevision is the revision of the
// ReplicaSet running d's template, if any, read only when needed.
type decideRequest func(d *appsv1.Deployment, templateRevision func() (int64, bool, error)) (requestOutcome, error)

// writeRequests writes the request decide returns to each target Deployment and prints each
// outcome, going on after a failure (eachTarget).
func writeRequests(ctx context.Context, t *TargetOptions, w *WriteOptions, out io.Writer, decide decideRequest) error {
	return t.eachTarget(ctx, func(name string) error {
		operation, after, err := sendRequest(ctx, t.Client, t.Namespace, name, w.DryRunStrategy, decide)
		if err != nil {
			return err
		}
		return w.printResult(operation, after, out)
	})
}

// sendRequest writes the request decide returns for Deployment namespace/name in one
// conflict-checked write, and says what it did. The verbs and the dashboard's actions both
// write through it, so a page's button refuses and writes exactly as the command does.
func sendRequest(ctx context.Context, client kubernetes.Interface, namespace, name string, dryRun cmdutil.DryRunStrategy, decide decideRequest) (string, *appsv1.Deployment, error) {
	var outcome requestOutcome
	res, err := writeDeployment(ctx, client, namespace, name, dryRun, strategicPatch, func(d *appsv1.Deployment) error {
		templateRevision := func() (int64, bool, error) { return newReplicaSetRevision(ctx, client, d) }
		var err error
		if outcome, err = decide(d, templateRevision); err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, grayapi.ResumeAnnotation, grayapi.FormatResume(outcome.req))
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if !res.Changed {
		return outcome.again, res.After, nil
	}
	return outcome.done, res.After, nil
}
