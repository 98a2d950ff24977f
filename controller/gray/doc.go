// Package gray decides a gray rollout's next move from the facts of one sync, in the order a
// sync asks: whether the status read is trusted (TrustStatus) and which rollout is in flight
// (Identify); then one decision for the sync (DecideSync): which way it goes (decideCourse: an
// undo, an abort, a retry or on, with an aborted rollout's sync, decideAborted), and when it goes on, the hold's gates (decideGates) and the
// move they feed (decideMove: a resume, a hold kept or left, the ReplicaSet sizes and the hold
// they reach, built on decideResume, decideHold and planSizes, which plans a canary's creation
// and the roll after it at once); the report once the
// writes are done (DecideReport: the phase, DecidePhase; the step's deadline, DecideDeadline;
// the events; when to look again); and what a rollout with an unreadable annotation still does
// (DecideInvalid). The moves a status makes are transition.go's: no phase is set anywhere else.
// Both modes read our status off a Deployment through StoredStatus (and HasLeftovers once it
// left gray) and show it in its conditions through SetConditions.
// The decisions DecideSync composes are unexported: a sync asks for its whole decision at once.
//
// Every function here is pure: it reads no client and no clock (now is a fact like any other),
// and writes nothing; controller/graysync reads the objects, asks, and writes what was
// decided, in the order its mode requires. The sizing arithmetic itself is pkg/rollout's; this
// package picks which rule applies and feeds it from the objects.
//
// TestPure holds the package to that: no k8s.io/client-go package among its dependencies, no
// call of time.Now in its code.
package gray
