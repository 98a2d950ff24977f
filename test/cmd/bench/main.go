// Command bench runs the benchmarks that need a real control plane and prints
// a table for BENCHMARKS.md:
//
//	bench rollout -controller ../bin/gray-controller
//	    the built-in deployment controller vs gray-controller (instead mode,
//	    same worker count) rolling out many Deployments side by side in one
//	    run: wall time, and API writes per rollout from the audit log.
//	bench gray -controller ../bin/gray-controller
//	    many gray rollouts at once: hold latency (new ReplicaSet at its target
//	    → Deployment paused), time from the image change to the hold, and
//	    overshoot (new ReplicaSet above its target at any write; must be 0).
//	bench scale -controller ../bin/gray-controller
//	    2,000 Deployments x 10 replicas (-deployments, -replicas), half of
//	    them held at 20% by gray-controller (-gray-fraction, -percent), rolled
//	    by the built-in controller and then by gray-controller --mode=instead:
//	    RSS of each controller process settled and at its peak, API requests
//	    per rollout by verb and resource (409 Conflicts apart) from the audit
//	    log, time to settle and the spread of per-Deployment settle times.
//	bench gates -controller ../bin/gray-controller
//	    100 Deployments x 4 replicas held at 50% (-deployments, -replicas,
//	    -percent), measured without gates and then each naming a Prometheus
//	    gate every 10 s (-interval), on one control plane, one real Prometheus
//	    and one gray-controller: queries per second Prometheus received
//	    against N/interval, sync duration and workqueue wait p50/p99,
//	    gray-controller's API requests, CPU and RSS, side by side, and the
//	    ratio of the sync p99s against the goal of 1.1.
//	bench gates-fairness -controller ../bin/gray-controller
//	    a quiet namespace's 10 held Deployments (-deployments), each with a
//	    gate every 10 s (-interval), measured alone and then beside a noisy
//	    namespace's 20 (-noisy-deployments) whose gates name the same
//	    provider and take 8 s an answer (-noisy-answer): the quiet
//	    namespace's delay from due to taken and to recorded, p50/p99/max,
//	    and both namespaces' outcomes ("provider busy" counted), side by
//	    side, against the goal of one interval.
//	bench configmaps -controller ../bin/gray-controller -baseline OLD
//	    1,000 ConfigMaps labelled kubegray.io/gates=true of 256 KiB each
//	    (-configmaps, -size) in 10 namespaces: gray-controller's RSS once
//	    settled and at its peak, against the chart's memory limit, beside
//	    a baseline binary's.
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "rollout":
		err = runRollout(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "gray":
		err = runGray(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "scale":
		err = runScale(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "configmaps":
		err = runConfigMaps(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "gates":
		err = runGates(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "gates-fairness":
		err = runGatesFairness(os.Args[2:])
	default:
		err = fmt.Errorf("usage: bench rollout|gray|scale|gates|gates-fairness|configmaps -controller PATH [flags]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
