package cluster

import (
	"fmt"
	"strings"
)

// NeverReadyAnnotation on a pod template keeps its pods Pending and not Ready
// (kwok's pod-ready stage skips them), standing in for a broken image.
const NeverReadyAnnotation = "kubegray.test/never-ready"

// CrashLoopAnnotation on a pod template names an image that crash-loops: the
// containers of its pods that run that image go into CrashLoopBackOff (waiting
// reason, back-off message, last state terminated with exit code 1), the pod
// is Running but not Ready, and the restart count climbs to 3, one restart a
// second, as a kubelet restarting a failing container would report it. The
// template's other images run normally, so a Deployment can carry the
// annotation from the start and a plain image change (`kubectl gray set
// --image`, `kubectl set image`) to the named image breaks its new pods.
const CrashLoopAnnotation = "kubegray.test/crash-loop"

// RestartWhileReadyAnnotation on a pod template names an image whose
// containers restart every two seconds while their pod stays Ready (a process
// that dies and comes back at once, as an application leaking memory under
// load does), up to 100 restarts; RestartReasonAnnotation gives the last
// state's reason ("OOMKilled"; "Error" when absent).
const (
	RestartWhileReadyAnnotation = "kubegray.test/restart-while-ready"
	RestartReasonAnnotation     = "kubegray.test/restart-reason"
)

// FlapReadinessAnnotation on a pod template names an image whose containers
// fall out of readiness and come back, over and over, without restarting (an
// application that stalls under load and recovers): its pods run Ready for
// three seconds, then not Ready for one, as long as they live.
const FlapReadinessAnnotation = "kubegray.test/flap-readiness"

// ReadyAfterAnnotation on a pod template holds a Go duration ("30s"), and its
// pods become Ready that long after kwok first sees them (an application that
// starts slowly), or an RFC 3339 instant, and they become Ready then, or at
// once if created after it (an application waiting for something that comes
// up then): a canary that becomes ready only after its progress deadline.
const ReadyAfterAnnotation = "kubegray.test/ready-after"

// UnschedulableLabel is a node label no fake node carries: a pod template
// whose nodeSelector asks for it (see UnschedulableNodeSelector) makes pods
// that the real kube-scheduler cannot place. They stay Pending with
// PodScheduled=False, reason Unschedulable and the scheduler's own message
// ("0/2 nodes are available: 2 node(s) didn't match Pod's node
// affinity/selector. ..."). kwok never sees them: it only plays stages for
// pods bound to its nodes.
const UnschedulableLabel = "kubegray.test/unschedulable"

// UnschedulableNodeSelector is the nodeSelector that no node satisfies.
func UnschedulableNodeSelector() map[string]string {
	return map[string]string{UnschedulableLabel: "true"}
}

// crashingContainers is the kwok selector key (a jq query) whose result is the
// names of the pod's containers running the image CrashLoopAnnotation names;
// nothing when the annotation is absent.
const crashingContainers = `.metadata.annotations["` + CrashLoopAnnotation + `"] as $image | .spec.containers.[] | select( .image == $image ) | .name`

// restartingContainers is the kwok selector key whose result is the names of
// the pod's containers running the image RestartWhileReadyAnnotation names.
const restartingContainers = `.metadata.annotations["` + RestartWhileReadyAnnotation + `"] as $image | .spec.containers.[] | select( .image == $image ) | .name`

// flappingContainers is the kwok selector key whose result is the names of the
// pod's containers running the image FlapReadinessAnnotation names.
const flappingContainers = `.metadata.annotations["` + FlapReadinessAnnotation + `"] as $image | .spec.containers.[] | select( .image == $image ) | .name`

// podReadySkips are the selector expressions added to kwok's pod-ready stage
// so that it leaves the pods of the stages above alone.
var podReadySkips = []string{
	`.metadata.annotations["` + NeverReadyAnnotation + `"]`,
	`.metadata.annotations["` + ReadyAfterAnnotation + `"]`,
	crashingContainers,
	upstreamUnpullableContainers, // upstream_images.go
}

// crashLoopStage plays a crash loop: each play, a second after the pod's last
// change, records one more restart of the crashing containers, until three.
// The status is a strategic merge patch, so the PodScheduled condition that
// the binding wrote stays.
const crashLoopStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-crash-loop
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '` + crashingContainers + `'
      operator: 'Exists'
    - key: '.status.containerStatuses.[] | select( .restartCount >= 3 ) | .name'
      operator: 'DoesNotExist'
  delay:
    durationMilliseconds: 1000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      {{ $image := index .metadata.annotations "` + CrashLoopAnnotation + `" }}
      {{ $crashing := list }}
      {{ range .spec.containers }}{{ if eq .image $image }}{{ $crashing = append $crashing .name }}{{ end }}{{ end }}
      {{ $unready := printf "containers with unready status: [%s]" ( join " " $crashing ) }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        message: {{ $unready | Quote }}
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: {{ $unready | Quote }}
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      {{ $name := .name }}
      {{ $restarts := 0 }}
      {{ range $root.status.containerStatuses }}{{ if eq .name $name }}{{ $restarts = int64 .restartCount }}{{ end }}{{ end }}
      {{ if eq .image $image }}
      {{ $backoff := index ( list "10s" "20s" "40s" ) ( min $restarts 2 ) }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: {{ add1 $restarts }}
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: {{ printf "back-off %s restarting failed container=%s pod=%s_%s(%s)" $backoff .name $root.metadata.name $root.metadata.namespace $root.metadata.uid | Quote }}
      {{ else }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}
      {{ $hostIPs := NodeIPsWith .spec.nodeName }}
      {{ with $hostIPs }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ or .status.startTime $now | Quote }}
`

// restartWhileReadyStage plays a container that restarts while its pod stays
// Ready: every two seconds once the pod runs, one more restart of the named
// image's containers, the last state terminated with the given reason, until
// 100. Only containerStatuses is written; the pod's conditions stay Ready.
const restartWhileReadyStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-restart-while-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '` + restartingContainers + `'
      operator: 'Exists'
    - key: '.status.containerStatuses.[] | select( .restartCount >= 100 ) | .name'
      operator: 'DoesNotExist'
  delay:
    durationMilliseconds: 2000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      {{ $image := index .metadata.annotations "` + RestartWhileReadyAnnotation + `" }}
      {{ $reason := or ( index .metadata.annotations "` + RestartReasonAnnotation + `" ) "Error" }}
      containerStatuses:
      {{ range .spec.containers }}
      {{ $name := .name }}
      {{ $restarts := 0 }}
      {{ range $root.status.containerStatuses }}{{ if eq .name $name }}{{ $restarts = int64 .restartCount }}{{ end }}{{ end }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
      {{ if eq .image $image }}
        restartCount: {{ add1 $restarts }}
        lastState:
          terminated:
            exitCode: 137
            reason: {{ $reason | Quote }}
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ else }}
        restartCount: {{ $restarts }}
      {{ end }}
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
`

// readinessFlapStages play FlapReadinessAnnotation: a Running pod that has been
// Ready for three seconds turns not Ready (its flapping containers unready,
// their restart counts kept), and one not Ready turns Ready again a second
// later. Each writes the Ready and ContainersReady conditions (merged by type,
// so the others stay) and every container's status (a list written whole).
var readinessFlapStages = []string{
	readinessFlapStage("pod-readiness-drop", "True", 3000, false),
	readinessFlapStage("pod-readiness-back", "False", 1000, true),
}

// readinessFlapStage is the stage that, delayMilliseconds after a flapping
// pod's Ready condition became from, makes it ready (or not).
func readinessFlapStage(name, from string, delayMilliseconds int, ready bool) string {
	conditions := `      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
`
	if !ready {
		conditions = `      - lastTransitionTime: {{ $now | Quote }}
        message: {{ $unready | Quote }}
        reason: ContainersNotReady
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        message: {{ $unready | Quote }}
        reason: ContainersNotReady
        status: "False"
        type: ContainersReady
`
	}
	return fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: %s
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values: ['%s']
    - key: '%s'
      operator: 'Exists'
  delay:
    durationMilliseconds: %d
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $root := . }}
      {{ $image := index .metadata.annotations "%s" }}
      {{ $flapping := list }}
      {{ range .spec.containers }}{{ if eq .image $image }}{{ $flapping = append $flapping .name }}{{ end }}{{ end }}
      {{ $unready := printf "containers with unready status: [%%s]" ( join " " $flapping ) }}
      conditions:
%s      containerStatuses:
      {{ range .spec.containers }}
      {{ $name := .name }}
      {{ $restarts := 0 }}
      {{ range $root.status.containerStatuses }}{{ if eq .name $name }}{{ $restarts = int64 .restartCount }}{{ end }}{{ end }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: {{ or %t ( ne .image $image ) }}
        started: true
        restartCount: {{ $restarts }}
        state:
          running:
            startedAt: {{ $root.status.startTime | Quote }}
      {{ end }}
`, name, from, flappingContainers, delayMilliseconds, FlapReadinessAnnotation, conditions, ready)
}

// patchStages teaches the cached stage set (documents split on "---") our
// failure modes: the pod-ready stage skips the pods of NeverReadyAnnotation,
// ReadyAfterAnnotation and CrashLoopAnnotation, a copy of it delayed by
// ReadyAfterAnnotation makes the slow pods ready, and the crash-loop,
// restart-while-ready and readiness-flap stages are added.
func patchStages(docs []string) ([]string, error) {
	skip := "    matchExpressions:\n"
	for _, key := range podReadySkips {
		skip += "    - key: '" + key + "'\n      operator: 'DoesNotExist'\n"
	}
	late := ""
	for i, doc := range docs {
		if strings.Contains(doc, "name: pod-ready\n") {
			late = strings.Replace(doc, "name: pod-ready\n", "name: pod-ready-late\n", 1)
			late = strings.Replace(late, "    matchExpressions:\n", "    matchExpressions:\n    - key: '.metadata.annotations[\""+
				ReadyAfterAnnotation+"\"]'\n      operator: 'Exists'\n", 1)
			late = strings.Replace(late, "  next:\n", "  delay:\n    durationFrom:\n      expressionFrom: '.metadata.annotations[\""+
				ReadyAfterAnnotation+"\"]'\n  next:\n", 1)
			docs[i] = strings.Replace(doc, "    matchExpressions:\n", skip, 1)
		}
	}
	if late == "" || !strings.Contains(late, "durationFrom") {
		return nil, fmt.Errorf("no pod-ready stage selector to patch")
	}
	return append(append(docs, late, crashLoopStage, restartWhileReadyStage), readinessFlapStages...), nil
}
