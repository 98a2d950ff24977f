package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// readinessPeriod is how often the stand-in kubelet probes readiness, whatever
// the probe's periodSeconds: a kubelet's default is 10 s, and tests would wait
// that long for each pod to become ready or to drop out.
const readinessPeriod = time.Second

// readiness is a change of a container run's readiness.
type readiness struct {
	run   int
	ready bool
}

// readinessURL is where the container's httpGet readiness probe asks: the
// host port given to the probed container port (named or numbered), or the
// port itself when the container does not declare it.
func readinessURL(container *corev1.Container, probe *corev1.HTTPGetAction, hostPorts map[int32]int) (string, error) {
	port := probe.Port.IntVal
	if probe.Port.Type == intstr.String {
		port = 0
		for _, p := range container.Ports {
			if p.Name == probe.Port.StrVal {
				port = p.ContainerPort
			}
		}
		if port == 0 {
			return "", fmt.Errorf("readiness probe port %q is no port of container %s", probe.Port.StrVal, container.Name)
		}
	}
	hostPort := int(port)
	if mapped, ok := hostPorts[port]; ok {
		hostPort = mapped
	}
	scheme := strings.ToLower(string(probe.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := probe.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return scheme + "://" + podIP + ":" + strconv.Itoa(hostPort) + path, nil
}

// probeReadiness asks url every readinessPeriod, after the probe's initial
// delay, and sends each change of the run's readiness to changes until ctx
// ends: ready after successThreshold successes in a row (a 2xx or 3xx answer
// within timeoutSeconds), not ready after failureThreshold failures in a row.
// The run starts not ready.
func probeReadiness(ctx context.Context, run int, probe *corev1.Probe, url string, changes chan<- readiness) {
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	successThreshold, failureThreshold := max(probe.SuccessThreshold, 1), probe.FailureThreshold
	if failureThreshold < 1 {
		failureThreshold = 3
	}
	// A kubelet neither follows a redirect nor checks an HTTPS probe's certificate.
	client := &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	defer client.CloseIdleConnections()
	wait := time.Duration(probe.InitialDelaySeconds) * time.Second
	ready := false
	var successes, failures int32
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = readinessPeriod
		if probeHTTP(ctx, client, url, probe.HTTPGet.HTTPHeaders) {
			successes, failures = successes+1, 0
		} else {
			successes, failures = 0, failures+1
		}
		if ready && failures >= failureThreshold || !ready && successes >= successThreshold {
			ready = !ready
			select {
			case changes <- readiness{run: run, ready: ready}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// probeHTTP reports whether a GET of url answers 2xx or 3xx.
func probeHTTP(ctx context.Context, client *http.Client, url string, headers []corev1.HTTPHeader) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	for _, h := range headers {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}
