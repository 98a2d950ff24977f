package cluster

// Kubernetes' own e2e tests make a rollout stall by giving the new pods an
// image no kubelet can pull, and then count on those pods never becoming
// Ready: test/e2e/apps/deployment.go uses a ":nonexistent" tag for rollover
// and "webserver:404" for proportional scaling, and test/utils/image names
// an "invalid.registry.k8s.io/" registry for the same purpose. kwok pulls
// nothing and would make them Ready at once, so the pod-ready stage skips
// pods with such an image and they stay Pending, as on a real node.

// upstreamUnpullableContainers is a kwok selector key (a jq query) whose
// result is the names of the pod's containers that run one of those images;
// nothing for every other pod.
const upstreamUnpullableContainers = `.spec.containers.[] | select(` +
	` ( .image | endswith(":nonexistent") )` +
	` or .image == "webserver:404"` +
	` or ( .image | startswith("invalid.registry.k8s.io/") ) ) | .name`
