// Package deployutil holds client-free helpers over Deployment and ReplicaSet
// objects that behave exactly like the upstream Kubernetes v1.37.2 deployment
// controller utilities: annotation keys and revision bookkeeping, condition
// handling, fencepost resolution, new/old ReplicaSet discovery, progress
// checks, pod-template hashing and ReplicaSet naming.
//
// The arithmetic lives in package rollout; this package only reads the
// numbers out of API objects and writes results back. Nothing here talks to
// an API server.
package deployutil
