// Package gray decides a gray rollout's next move from the facts of one sync: which rollout is
// in flight (Identify), the moves its status makes and the phase to report (transition.go,
// DecidePhase: no phase is set anywhere else), whether our hold stays (DecideHold), whether a
// hold is left (DecideResume), the step's clocks and deadline (DecideDeadline), an abort or a
// retry (DecideAbort), and the ReplicaSet sizes (PlanSizes, PlanAbortSizes). Every function
// here is pure: it reads no client and no clock (now is a fact like any other), and writes
// nothing; controller/deployment reads the objects, asks, and writes what was decided. The
// sizing arithmetic itself is pkg/rollout's; this package picks which rule applies, feeds it
// from the objects and orders the old ReplicaSets the way it expects.
//
// TestPure holds the package to that: no k8s.io/client-go package among its dependencies, no
// call of time.Now in its code.
package gray
