// Package gray decides a gray rollout's next move from the facts of one sync. A sync gathers its
// facts (Facts) and asks once (Decide): whether the status read is trusted (trustStatus, and a
// status someone else wrote), which rollout is in flight (identify), and the sync's course, gates,
// move and hand-over (decideSync): which way it goes (decideCourse: an undo, an abort, a retry or
// on, with an aborted rollout's sync, decideAborted), and when it goes on, the hold's gates
// (decideGates) and the move they feed (decideMove: a resume, a hold kept or left, the ReplicaSet
// sizes and the hold they reach, built on decideResume, decideHold and planSizes, which plans a
// canary's creation and the roll after it at once); or, for an unreadable annotation, what the
// rollout still does (decideInvalid). Once the writes are done the sync asks for its report
// (DecideReport: the phase, DecidePhase; the step's deadline, DecideDeadline; the events; when to
// look again). The moves a status makes are transition.go's: no phase is set anywhere else.
// Both modes read our status off a Deployment through StoredStatus (and HasLeftovers once it
// left gray) and show it in its conditions through SetConditions.
//
// Every function here is pure: it reads no client and no clock (now is a fact like any other),
// and writes nothing; controller/graysync reads the objects, asks, and writes what was
// decided, in the order its mode requires. The sizing arithmetic itself is pkg/rollout's; this
// package picks which rule applies and feeds it from the objects.
//
// TestPure holds the package to that: no k8s.io/client-go package among its dependencies, no
// call of time.Now in its code.
package gray
