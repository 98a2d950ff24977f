// Package rollout holds the pure arithmetic of a Deployment rollout: how far a
// rolling update may surge or dip, how many replicas the new ReplicaSet may
// get, how a scaling event is spread proportionally over several active
// ReplicaSets, and how many replicas a gray step targets.
//
// Every function takes plain integers (plus intstr for the user-facing
// fenceposts) and returns plain integers, so the numbers can be checked by
// hand against the behaviour of the upstream v1.37.2 controller
// (k8s.io/kubernetes pkg/controller/deployment: rolling.go, sync.go: scale).
// Package deployutil adapts these functions to API objects.
package rollout
