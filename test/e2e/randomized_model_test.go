package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// This file is the test's own model of gray rollouts, written from the
// documented rules (README "Target rounding", docs/design.md: gray semantics) and deliberately
// independent of pkg/rollout and of grayapi's parsers: a bug in the code
// under test must not be copied into the expectations.

// grayTarget is T(R, P): 0 for P = 0, else ceil(R·P/100), at least 1, and
// at most R−1 when R ≥ 2 (so one replica held at any P > 0 is 1).
func grayTarget(replicas, percent int32) int32 {
	if percent <= 0 || replicas <= 0 {
		return 0
	}
	t := (replicas*percent + 99) / 100
	t = max(t, 1)
	if replicas >= 2 {
		t = min(t, replicas-1)
	}
	return t
}

// savedStrategy is a parsed kubegray.io/strategy value.
type savedStrategy struct {
	rollingUpdate            bool
	maxSurge, maxUnavailable intstr.IntOrString
}

// parseSavedStrategy reads "Recreate" or
// "RollingUpdate;maxSurge=25%;maxUnavailable=25%" (either limit optional,
// defaulting to the API's 25%).
func parseSavedStrategy(value string) (savedStrategy, error) {
	parts := strings.Split(value, ";")
	s := savedStrategy{maxSurge: intstr.FromString("25%"), maxUnavailable: intstr.FromString("25%")}
	switch parts[0] {
	case "Recreate":
		if len(parts) > 1 {
			return s, fmt.Errorf("strategy %q: Recreate takes no parameters", value)
		}
		return s, nil
	case "RollingUpdate":
		s.rollingUpdate = true
	default:
		return s, fmt.Errorf("strategy %q: unknown type %q", value, parts[0])
	}
	for _, kv := range parts[1:] {
		key, raw, ok := strings.Cut(kv, "=")
		digits, percent := strings.CutSuffix(raw, "%")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || n < 0 {
			return s, fmt.Errorf("strategy %q: malformed %q", value, kv)
		}
		v := intstr.FromInt32(int32(n))
		if percent {
			v = intstr.FromString(raw)
		}
		switch key {
		case "maxSurge":
			s.maxSurge = v
		case "maxUnavailable":
			s.maxUnavailable = v
		default:
			return s, fmt.Errorf("strategy %q: unknown key %q", value, key)
		}
	}
	return s, nil
}

type opKind int

const (
	opScale        opKind = iota // kubectl scale
	opResume                     // kubectl gray resume
	opResumeFull                 // kubectl gray resume --full
	opUndo                       // kubectl gray undo
	opGraySetImage               // kubectl gray set web POINTS --image app=IMAGE
	opSetImage                   // kubectl set image
	opSetPoints                  // kubectl gray set web POINTS
	opKill                       // SIGKILL the leading gray-controller
	opScaleResume                // kubectl scale, then at once kubectl gray resume
	opScaleZero                  // kubectl scale --replicas=0, then back once settled
	opPauseResume                // the user pauses (kubectl rollout pause, or kubegray.io/paused while taken over), then kubectl rollout resume
	opDeleteOld                  // kubectl delete an old ReplicaSet at 0 that is not the stable one
	opRestart                    // kubectl gray restart (refused where maxUnavailable resolves to 0)
)

// op is one user action of a scenario.
type op struct {
	kind     opKind
	replicas int32   // opScale, opScaleResume
	points   []int32 // opGraySetImage, opSetPoints
	image    string  // opGraySetImage, opSetImage
	// kill: SIGKILL the leader right after issuing the action, before waiting.
	kill bool
	// wantNew and wantOld, when set (fixed scenarios), are hand-computed
	// sizes the model must agree with.
	wantNew, wantOld *int32
}

func (o op) String() string {
	var s string
	switch o.kind {
	case opScale:
		s = fmt.Sprintf("kubectl scale --replicas=%d", o.replicas)
	case opResume:
		s = "kubectl gray resume"
	case opResumeFull:
		s = "kubectl gray resume --full"
	case opUndo:
		s = "kubectl gray undo"
	case opGraySetImage:
		s = fmt.Sprintf("kubectl gray set web %s --image app=%s", formatPoints(o.points), o.image)
	case opSetImage:
		s = "kubectl set image app=" + o.image
	case opSetPoints:
		s = "kubectl gray set web " + formatPoints(o.points)
	case opKill:
		s = "SIGKILL the leading gray-controller"
	case opScaleResume:
		s = fmt.Sprintf("kubectl scale --replicas=%d, then at once kubectl gray resume", o.replicas)
	case opScaleZero:
		s = "kubectl scale --replicas=0, then back"
	case opPauseResume:
		s = "pause (kubectl rollout pause, or kubegray.io/paused while taken over), then kubectl rollout resume"
	case opDeleteOld:
		s = "kubectl delete an old replicaset at 0 (not the stable one)"
	case opRestart:
		s = "kubectl gray restart"
	}
	if o.kill {
		s += ", then SIGKILL the leader"
	}
	return s
}

func formatPoints(points []int32) string {
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = strconv.Itoa(int(p))
		if d := pointHoldFor(p); d > 0 {
			parts[i] += "@" + d.String()
		}
	}
	return strings.Join(parts, ",")
}

// pointHoldFor is the duration of its own the suite gives hold point p in kubegray.io/percent:
// none, an hour or the longest allowed (744h), drawn with the point. None ends within a scenario,
// so the model's holds still wait for a resume; what the suite checks is that a point's duration
// never ends a hold early (noCompletionWithoutResume) and that every settled hold records it
// (compare: the point's when the hold settled, kept through new hold points that do not make it
// settle again), across every op and leader kill.
func pointHoldFor(p int32) time.Duration {
	return []time.Duration{0, time.Hour, grayapi.MaxHoldFor}[p%3]
}

// expectation is the state a gray Deployment must be in when `kubectl gray
// status --until` returns after an op.
type expectation struct {
	phase    grayapi.Phase
	newSpec  int32
	oldTotal int32
	paused   bool
	image    string
}

func (e expectation) String() string {
	return fmt.Sprintf("%s new %d old %d paused %t image %s", e.phase, e.newSpec, e.oldTotal, e.paused, e.image)
}

// model is what the rules say a scenario's Deployment is.
type model struct {
	replicas    int32
	points      []int32
	held        bool // false: Complete
	step        int
	image       string
	stableImage string // of the last rollout that completed: undo's target
}

// valid says whether o makes sense in the model's state: resume, undo and a
// change of hold points need a hold.
func (m *model) valid(o op) bool {
	switch o.kind {
	case opResume, opResumeFull, opUndo, opSetPoints, opScaleResume:
		return m.held
	}
	return true
}

func (m *model) apply(o op) {
	switch o.kind {
	case opScale:
		m.replicas = o.replicas
	case opScaleResume:
		m.replicas = o.replicas
		m.next()
	case opResume:
		m.next()
	case opResumeFull:
		m.complete()
	case opUndo:
		m.image = m.stableImage
		m.complete()
	case opGraySetImage:
		m.points = o.points
		m.image = o.image
		m.held, m.step = true, 0
	case opSetImage:
		m.image = o.image
		m.held, m.step = true, 0
	case opSetPoints:
		m.step = newStep(m.points, o.points, m.step)
		m.points = o.points
	}
}

func (m *model) next() {
	m.step++
	if m.step == len(m.points) {
		m.complete()
	}
}

func (m *model) complete() {
	m.held = false
	m.stableImage = m.image
}

// newStep is where a hold moves when its points change from old to new at
// step s: with c the percent reached, s itself if the new points keep c
// there, else the last new point at or below c, else the first.
func newStep(old, new []int32, s int) int {
	c := old[s]
	if s < len(new) && new[s] == c {
		return s
	}
	step := 0
	for i, p := range new {
		if p <= c {
			step = i
		}
	}
	return step
}

func (m *model) want() expectation {
	if !m.held {
		return expectation{phase: grayapi.PhaseComplete, newSpec: m.replicas, image: m.image}
	}
	t := grayTarget(m.replicas, m.points[m.step])
	return expectation{phase: grayapi.PhaseHeld, newSpec: t, oldTotal: m.replicas - t, paused: true, image: m.image}
}

// grayScenario is one Deployment's life: its shape and the ops after the initial
// create (complete) and first image change (held at the first point).
type grayScenario struct {
	name       string
	index      int
	seed       uint64
	replicas   int32
	maxSurge   intstr.IntOrString
	maxUnavail intstr.IntOrString
	points     []int32
	ops        []op
}

// describe is the scenario for a failure report: its shape and every op with
// the state the model wants after it, the failed one (index into ops, -1 for
// none) marked.
func (s grayScenario) describe(failed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "grayScenario %s (index %d, seed %d): R=%d maxSurge=%s maxUnavailable=%s points %s\n", s.name, s.index, s.seed,
		s.replicas, s.maxSurge.String(), s.maxUnavail.String(), formatPoints(s.points))
	m := s.start()
	fmt.Fprintf(&b, "        create with %s -> want %s\n", firstImage, m.want())
	for i, o := range s.ops {
		m.apply(o)
		mark := "     "
		if i == failed {
			mark = "FAIL "
		}
		fmt.Fprintf(&b, "  %sop %d: %s -> want %s\n", mark, i, o, m.want())
	}
	return b.String()
}

// start is the model right after the create: complete on the first image.
func (s grayScenario) start() *model {
	return &model{replicas: s.replicas, points: s.points, image: firstImage, stableImage: firstImage}
}

const firstImage = "nginx:1.25"

var (
	replicaChoices = []int32{1, 2, 3, 4, 5, 7, 10, 13, 20}
	limitChoices   = []intstr.IntOrString{intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(2),
		intstr.FromString("25%"), intstr.FromString("50%"), intstr.FromString("100%")}
)

// randomScenario draws scenario index of a run: its own seed comes from the
// run's seed and the index, so it replays alone (GRAY_ONLY).
func randomScenario(runSeed uint64, index int) grayScenario {
	seed := runSeed*1_000_003 + uint64(index)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := grayScenario{name: fmt.Sprintf("random-%d", index), index: index, seed: seed,
		replicas: replicaChoices[rng.IntN(len(replicaChoices))], points: randomPoints(rng)}
	for {
		s.maxSurge, s.maxUnavail = limitChoices[rng.IntN(len(limitChoices))], limitChoices[rng.IntN(len(limitChoices))]
		if s.maxSurge.String() != "0" || s.maxUnavail.String() != "0" {
			break
		}
	}
	tags := 0
	image := func() string { tags++; return fmt.Sprintf("nginx:1.%d", 25+tags) }
	m := s.start()
	first := op{kind: opSetImage, image: image()}
	s.ops = append(s.ops, first)
	m.apply(first)
	for n := 4 + rng.IntN(7); n > 0; n-- {
		o := randomOp(rng, m, image)
		o.kill = o.kind != opKill && rng.IntN(8) == 0
		s.ops = append(s.ops, o)
		m.apply(o)
	}
	s.ops = withRestarts(seed, s.ops)
	if m.held {
		end := op{kind: opResumeFull}
		if rng.IntN(3) == 0 {
			end.kind = opUndo
		}
		s.ops = append(s.ops, end)
	}
	return s
}

// withRestarts puts a `kubectl gray restart` after about one op in ten of ops: every op
// settles into a hold or a completed rollout, which restart serves, and a restart changes
// nothing the model knows. The draws use a stream of their own, so that a seed's other ops stay
// what they were before restarts were drawn.
func withRestarts(seed uint64, ops []op) []op {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed_0f_4e57a47))
	var out []op
	for _, o := range ops {
		out = append(out, o)
		if rng.IntN(10) == 0 {
			out = append(out, op{kind: opRestart})
		}
	}
	return out
}

func randomOp(rng *rand.Rand, m *model, image func() string) op {
	for {
		var o op
		switch r := rng.IntN(100); {
		case r < 24:
			o = op{kind: opScale, replicas: randomReplicas(rng, m)}
		case r < 28:
			o = op{kind: opScaleZero}
		case r < 42:
			o = op{kind: opResume}
		case r < 47:
			o = op{kind: opResumeFull}
		case r < 53:
			o = op{kind: opUndo}
		case r < 61:
			o = op{kind: opGraySetImage, points: m.points, image: image()}
			if rng.IntN(2) == 0 {
				o.points = randomPoints(rng)
			}
		case r < 68:
			o = op{kind: opSetImage, image: image()}
		case r < 80:
			o = op{kind: opSetPoints, points: randomPoints(rng)}
		case r < 86:
			o = op{kind: opPauseResume}
		case r < 91:
			o = op{kind: opDeleteOld}
		default:
			o = op{kind: opKill}
		}
		if m.valid(o) {
			return o
		}
	}
}

// randomReplicas is 1, 2, the canary's current size, or anything up to 20.
func randomReplicas(rng *rand.Rand, m *model) int32 {
	switch rng.IntN(4) {
	case 0:
		return 1
	case 1:
		return 2
	case 2:
		if n := m.want().newSpec; n > 0 {
			return n
		}
	}
	return 1 + rng.Int32N(20)
}

// randomPoints is one to three strictly increasing hold points in 0–99.
func randomPoints(rng *rand.Rand) []int32 {
	n := 1 + rng.IntN(3)
	seen := map[int32]bool{}
	for len(seen) < n {
		seen[rng.Int32N(100)] = true
	}
	points := make([]int32, 0, n)
	for p := range int32(100) {
		if seen[p] {
			points = append(points, p)
		}
	}
	return points
}

// TestGrayRandomizedModel checks the model against the README's hand-computed
// table and the hold-point rule, without a cluster.
func TestGrayRandomizedModel(t *testing.T) {
	for _, tc := range []struct{ r, p, want int32 }{
		{1, 1, 1}, {1, 33, 1}, {1, 99, 1}, {2, 1, 1}, {2, 50, 1}, {2, 99, 1}, {3, 1, 1}, {3, 33, 1}, {3, 34, 2},
		{3, 50, 2}, {3, 99, 2}, {10, 1, 1}, {10, 33, 4}, {10, 34, 4}, {10, 50, 5}, {10, 99, 9}, {4, 58, 3}, {3, 58, 2},
		{6, 83, 5}, {4, 0, 0}, {1, 0, 0},
	} {
		if got := grayTarget(tc.r, tc.p); got != tc.want {
			t.Errorf("grayTarget(%d, %d) = %d, want %d", tc.r, tc.p, got, tc.want)
		}
	}
	for _, tc := range []struct {
		old, new []int32
		s, want  int
	}{
		{[]int32{20, 50}, []int32{10, 50, 70}, 1, 1}, // 50% kept at step 1
		{[]int32{20, 50}, []int32{30, 60}, 1, 0},     // back to the last point ≤ 50
		{[]int32{20, 50}, []int32{10, 40}, 1, 1},     // 40 ≤ 50 is the last
		{[]int32{20}, []int32{30, 60}, 0, 0},         // every point above: the first
		{[]int32{10, 30, 60}, []int32{5, 10, 30}, 2, 2},
	} {
		if got := newStep(tc.old, tc.new, tc.s); got != tc.want {
			t.Errorf("newStep(%v, %v, %d) = %d, want %d", tc.old, tc.new, tc.s, got, tc.want)
		}
	}
	for _, tc := range []struct {
		value, surge, unavailable string
		rolling                   bool
	}{
		{"RollingUpdate;maxSurge=25%;maxUnavailable=25%", "25%", "25%", true},
		{"RollingUpdate;maxSurge=0;maxUnavailable=1", "0", "1", true},
		{"RollingUpdate;maxUnavailable=100%", "25%", "100%", true},
		{"Recreate", "25%", "25%", false},
	} {
		s, err := parseSavedStrategy(tc.value)
		if err != nil || s.rollingUpdate != tc.rolling || s.maxSurge.String() != tc.surge || s.maxUnavailable.String() != tc.unavailable {
			t.Errorf("parseSavedStrategy(%q) = %+v, %v", tc.value, s, err)
		}
	}
	// Every drawn scenario is valid for the model and ends complete.
	for i := range 200 {
		s := randomScenario(42, i)
		m := s.start()
		for _, o := range s.ops {
			if !m.valid(o) {
				t.Fatalf("%s: op %s invalid in its state", s.name, o)
			}
			m.apply(o)
		}
		if m.held {
			t.Fatalf("%s ends held:\n%s", s.name, s.describe(-1))
		}
	}
}
