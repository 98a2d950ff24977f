package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The traffic the Prometheus gates judge: kwok's pods serve nothing, so this exporter plays
// their HTTP servers' metrics, as a sidecar or an ingress would report them, for the test's
// Prometheus to scrape. Every running pod of the cluster has served 10 requests a second since
// it was created; a share of them failed (5xx), set by its app container's image.

// errorImage is the image whose pods answer 20% of requests with a 5xx; every other image fails
// one in a thousand.
const errorImage = "nginx:1.26-errors"

// errorShare is the share of a pod's requests that fail, by its app container's image.
func errorShare(image string) float64 {
	if image == errorImage {
		return 0.2
	}
	return 0.001
}

// decoyNamespace labels a copy of every pod's series in which every request failed: a query not
// scoped to its Deployment's namespace would read them and find any canary failing.
const decoyNamespace = "decoy"

// trafficExporter serves /metrics on a free loopback port until the test ends; it serves
// nothing until it is given a cluster's client (Prometheus, and so the exporter, starts before
// the gray-controller that is given Prometheus' URL and the cluster with it).
type trafficExporter struct {
	addr   string
	client atomic.Pointer[kubernetes.Interface]
}

func startTrafficExporter(t *testing.T) *trafficExporter {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &trafficExporter{addr: l.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := "# TYPE http_requests_total counter\n"
		if client := e.client.Load(); client != nil {
			if text, err = trafficMetrics(r.Context(), *client, time.Now()); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(text))
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return e
}

// trafficMetrics is the exposition at now: http_requests_total by namespace, pod and code.
func trafficMetrics(ctx context.Context, client kubernetes.Interface, now time.Time) (string, error) {
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# TYPE http_requests_total counter\n")
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil || len(p.Spec.Containers) == 0 {
			continue
		}
		served := int64(now.Sub(p.CreationTimestamp.Time).Seconds() * 10)
		failed := int64(float64(served) * errorShare(p.Spec.Containers[0].Image))
		fmt.Fprintf(&b, "http_requests_total{namespace=%q,pod=%q,code=\"200\"} %d\n", p.Namespace, p.Name, served-failed)
		fmt.Fprintf(&b, "http_requests_total{namespace=%q,pod=%q,code=\"500\"} %d\n", p.Namespace, p.Name, failed)
		fmt.Fprintf(&b, "http_requests_total{namespace=%q,pod=%q,code=\"500\"} %d\n", decoyNamespace, p.Name, served)
	}
	return b.String(), nil
}
