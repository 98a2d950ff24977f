package main

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"sync"
	"time"
)

// slowProm answers Prometheus' instant-query API (GET /api/v1/query) for `bench
// gates-fairness`: at once for every namespace but one, which it answers only after a delay. A
// real Prometheus cannot be told to be slow for one tenant, and what is under test is
// gray-controller's sharing of the provider's slots, not the query: so each answer is the same
// one sample of 0, which the bench's gate (error rate < 0.05) passes.
type slowProm struct {
	url    string
	server *http.Server
	slow   string        // the namespace whose queries are slow
	delay  time.Duration // how long each of its queries takes

	mu        sync.Mutex
	received  map[string]int // namespace → queries received
	abandoned map[string]int // namespace → queries gray-controller gave up on before the answer
}

// scopedNamespace finds the namespace gray-controller scoped a gate's query to: it adds
// namespace="<the Deployment's>" to every selector (docs/gates.md).
var scopedNamespace = regexp.MustCompile(`namespace="([^"]*)"`)

// startSlowProm serves on a free loopback port.
func startSlowProm(slow string, delay time.Duration) (*slowProm, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &slowProm{url: "http://" + l.Addr().String(), slow: slow, delay: delay, received: map[string]int{}, abandoned: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/query", p.query)
	p.server = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

func (p *slowProm) query(w http.ResponseWriter, r *http.Request) {
	namespace := ""
	if m := scopedNamespace.FindStringSubmatch(r.URL.Query().Get("query")); m != nil {
		namespace = m[1]
	}
	p.mu.Lock()
	p.received[namespace]++
	p.mu.Unlock()
	if namespace == p.slow {
		// Held until the delay is over or gray-controller gives up (its provider's timeout).
		select {
		case <-time.After(p.delay):
		case <-r.Context().Done():
			p.mu.Lock()
			p.abandoned[namespace]++
			p.mu.Unlock()
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%.3f,"0"]}]}}`,
		float64(time.Now().UnixMilli())/1000)
}

// queries is how many queries of namespace it has received, and how many of them gray-controller
// gave up on before the answer (its timeout, which counts from the wait for a slot).
func (p *slowProm) queries(namespace string) (received, abandoned int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.received[namespace], p.abandoned[namespace]
}

func (p *slowProm) close() { _ = p.server.Close() }
