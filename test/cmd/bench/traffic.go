package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listers "k8s.io/client-go/listers/core/v1"
)

// trafficExporter plays the HTTP servers of the bench's pods for Prometheus to scrape: kwok's
// pods serve nothing, and a metric gate needs a query that finds data, or every measurement is
// NoData and the bench would measure a Prometheus answering "nothing" (cheaper than real work).
// Every running pod has served 10 requests a second since it was created, one in a thousand of
// them failed; as test/e2e's exporter, the series carry the pod's namespace, which the
// controller scopes every gate's selectors to.
//
// The pods come from an informer, not a list per scrape: Prometheus scrapes every second, and a
// list of thousands of pods a second would load kube-apiserver during the run being measured.
type trafficExporter struct {
	addr   string
	pods   listers.PodLister
	server *http.Server
	stop   context.CancelFunc
}

// startTrafficExporter serves /metrics on a free loopback port once its pod cache has synced.
func startTrafficExporter(ctx context.Context, client kubernetes.Interface, namespace string) (*trafficExporter, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	pods := factory.Core().V1().Pods()
	e := &trafficExporter{pods: pods.Lister(), stop: cancel}
	pods.Informer() // registered before Start, which starts only the informers asked for
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("traffic exporter: pod cache did not sync")
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, err
	}
	e.addr = l.Addr().String()
	e.server = &http.Server{Handler: http.HandlerFunc(e.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.server.Serve(l) }()
	return e, nil
}

func (e *trafficExporter) serve(w http.ResponseWriter, _ *http.Request) {
	pods, err := e.pods.List(labels.Everything())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	now := time.Now()
	var b strings.Builder
	b.WriteString("# TYPE http_requests_total counter\n")
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		served := int64(now.Sub(p.CreationTimestamp.Time).Seconds() * 10)
		failed := served / 1000
		fmt.Fprintf(&b, "http_requests_total{namespace=%q,pod=%q,code=\"200\"} %d\n", p.Namespace, p.Name, served-failed)
		fmt.Fprintf(&b, "http_requests_total{namespace=%q,pod=%q,code=\"500\"} %d\n", p.Namespace, p.Name, failed)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}

// close stops serving and the informer.
func (e *trafficExporter) close() {
	_ = e.server.Close()
	e.stop()
}
