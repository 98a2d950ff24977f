// Package alongside is gray-controller's alongside mode (docs/design.md: Alongside mode): it
// runs next to the built-in deployment controller, and only Deployments carrying
// kubegray.io/percent, or taken over, are its own; the rest are the built-in controller's.
//
// A gray rollout in flight is taken over (takeover.go: paused, strategy Recreate, its own
// strategy saved in kubegray.io/strategy) with its ReplicaSets frozen (freeze.go: the
// kubegray-freeze admission policy then refuses a size change to anyone but gray-controller, so
// the built-in controller's paused sync cannot move pods) before anything of it is written. It
// then runs the same gray sync as instead mode, which controller/graysync carries out through
// a View (view.go): the saved strategy, and paused exactly while we hold, while the server keeps
// paused=true and Recreate; only our part of the status is written (writes.go). It is released
// (takeover.go), its sizes thawed first, when the rollout ends or leaves gray. Every sync repairs
// what a missing admission policy would have refused (sync.go).
//
// The built-in controller still writes the ReplicaSets' annotations, and may have created one
// the cache lacks: other_writer.go answers both. Instead mode uses this package for one thing:
// releasing a Deployment left taken over (ReleaseTakenOver).
//
// The package imports neither controller/graysync nor controller/deployment: what it needs of
// the gray sync it runs in (the sync, the durable record of stable revisions, the caches) is its
// Host (controller/graysync: alongsideHost).
package alongside
