package plugin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Exit codes of kubectl-gray, listed in the root help.
const (
	// ExitOK: success, or the phase awaited by `status --until` was reached.
	ExitOK = 0
	// ExitFailure: any error, or the rollout awaited by `status --until` is
	// Degraded or Invalid, or was rolled back by kubegray.io/on-failure.
	ExitFailure = 1
	// ExitTimeout: `status --until` or `restart` ran out of --timeout.
	ExitTimeout = 2
)

// exitError carries an exit code other than ExitFailure up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// ExitCode maps the error a command returned to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitFailure
}

// apiError turns an API error about one Deployment into one that names it and
// says what to do. verb is the API verb that failed ("get", "patch", ...).
func apiError(err error, verb, namespace, name string) error {
	obj := fmt.Sprintf("deployment %s/%s", namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s not found: check the name and the namespace (-n), or list them with 'kubectl get deployments -n %s'", obj, namespace)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "AdmissionPolicy"):
		// A policy's message (the guard's names the command to use) is the whole answer.
		return fmt.Errorf("%s: refused by an admission policy: %w", obj, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: you may not %s deployments.apps in namespace %s; ask for RBAC permission (check with 'kubectl auth can-i %s deployments.apps -n %s'): %w",
			obj, verb, namespace, verb, namespace, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the API server did not accept your credentials; log in again or check --kubeconfig and --context: %w", obj, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s kept changing while kubectl gray wrote it; run the command again: %w", obj, err)
	}
	return fmt.Errorf("%s: %w", obj, err)
}

// outputError names -o in a printer's refusal of its value, which names only the format, so
// the message says which flag to fix and what it takes.
func outputError(err error) error {
	var e genericclioptions.NoCompatiblePrinterError
	if !errors.As(err, &e) || e.OutputFormat == nil {
		return err
	}
	allowed := slices.Sorted(slices.Values(e.AllowedFormats))
	return fmt.Errorf("invalid -o %q: use one of %s", *e.OutputFormat, strings.Join(allowed, ", "))
}

// reachError rewords an error whose cause is that the API server could not be reached (the
// connection failed, or its name did not resolve) to say so with the address and the cause,
// whatever the request was: a wrong context or a cluster that is down is not a fact about the
// Deployment. Any other error passes unchanged.
func reachError(err error) error {
	server, cause, ok := unreachable(err)
	if !ok {
		return err
	}
	return fmt.Errorf("cannot reach the API server at %s: %w; check that the cluster is up and that --context, --server or the kubeconfig point to it", server, cause)
}

// unreachable finds in err a request that failed to connect to the server or to resolve its
// name, and returns the server's address and the cause.
func unreachable(err error) (server string, cause error, ok bool) {
	var urlErr *url.Error
	if !errors.As(err, &urlErr) {
		return "", nil, false
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.As(urlErr.Err, &dnsErr):
		cause = dnsErr
	case errors.As(urlErr.Err, &opErr):
		// The operation's own error ("connect: connection refused"): the OpError repeats the
		// address, which the message already gives.
		cause = opErr.Err
	default:
		return "", nil, false
	}
	server = urlErr.URL
	if u, perr := url.Parse(urlErr.URL); perr == nil {
		server = u.Scheme + "://" + u.Host
	}
	return server, cause, true
}

// objectErrors are the failures of a verb run on several Deployments, each naming its
// Deployment. They print one a line, each after the error prefix, as kubectl prints the
// failures of several objects.
type objectErrors []error

func (e objectErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n"+errPrefix+" ")
}

func (e objectErrors) Unwrap() []error { return e }

// joinObjectErrors is nil for no failure, the failure itself for one, objectErrors for more.
func joinObjectErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return objectErrors(errs)
}
