package e2e

import (
	"fmt"
	"testing"
)

// ciSeed is TestGrayRandomized's seed when GRAY_SEED is unset, as in `make test`: a run then
// proves what the last one did, and TestGrayRandomizedCoverage holds the scenarios it draws to
// covering everything people do. New seeds are `make test-randomized`'s (BENCHMARKS.md).
const ciSeed = 20261233

// TestGrayRandomizedCoverage fails when the scenarios TestGrayRandomized draws by default
// (ciSeed, defaultScenarios and defaultFailing) leave out an operation, a kill, a shape people
// use (one replica, maxSurge 0, maxUnavailable 0, a hold point of 90% or more) or a kind of
// failing canary. Changing the generator, the counts or the seed must keep all of them.
func TestGrayRandomizedCoverage(t *testing.T) {
	var scenarios []grayScenario
	for i := range defaultScenarios {
		scenarios = append(scenarios, randomScenario(ciSeed, i))
	}
	if missing := uncovered(scenarios, failingScenarios(ciSeed, defaultFailing, -1)); len(missing) > 0 {
		t.Errorf("seed %d with %d scenarios and %d failing ones never draws: %v", ciSeed, defaultScenarios, defaultFailing, missing)
	}
}

// uncovered lists what a set of scenarios never draws, from the list TestGrayRandomizedCoverage
// names.
func uncovered(scenarios []grayScenario, failing []failingScenario) []string {
	seen := map[string]bool{}
	shape := func(replicas int32, maxSurge, maxUnavail string, points []int32) {
		seen["1 replica"] = seen["1 replica"] || replicas == 1
		seen["maxSurge 0"] = seen["maxSurge 0"] || maxSurge == "0"
		seen["maxUnavailable 0"] = seen["maxUnavailable 0"] || maxUnavail == "0"
		seen["a hold point of 90% or more"] = seen["a hold point of 90% or more"] || points[len(points)-1] >= 90
	}
	for _, s := range scenarios {
		shape(s.replicas, s.maxSurge.String(), s.maxUnavail.String(), s.points)
		for _, o := range s.ops {
			seen[opName(o.kind)] = true
			if o.kill {
				seen["a kill right after an operation"] = true
			}
		}
	}
	for _, s := range failing {
		shape(s.replicas, s.maxSurge.String(), s.maxUnavail.String(), s.points)
		policy, canary := "hold", "never ready"
		if s.abort {
			policy = "abort"
		}
		if s.late {
			canary = "late"
		}
		if s.gate {
			canary = "failing its gate"
		}
		seen[fmt.Sprintf("failing: on-failure %s, canary %s", policy, canary)] = true
		seen["failing: a kill after the template change"] = seen["failing: a kill after the template change"] || s.kill
	}
	var missing []string
	for _, want := range coverageWanted() {
		if !seen[want] {
			missing = append(missing, want)
		}
	}
	return missing
}

// coverageWanted is everything the default scenarios must draw: every operation randomOp and
// withRestarts draw (opScaleResume is only in TestGrayKnownFailures), then kills, shapes and
// failures.
func coverageWanted() []string {
	var want []string
	for _, k := range []opKind{opScale, opResume, opResumeFull, opUndo, opGraySetImage, opSetImage, opSetPoints, opKill,
		opScaleZero, opPauseResume, opDeleteOld, opRestart} {
		want = append(want, opName(k))
	}
	want = append(want, "a kill right after an operation", "1 replica", "maxSurge 0", "maxUnavailable 0", "a hold point of 90% or more")
	for _, policy := range []string{"hold", "abort"} {
		for _, canary := range []string{"never ready", "late", "failing its gate"} {
			want = append(want, fmt.Sprintf("failing: on-failure %s, canary %s", policy, canary))
		}
	}
	return append(want, "failing: a kill after the template change")
}

// opName names an operation kind by what the user runs.
func opName(k opKind) string {
	return "operation: " + op{kind: k}.String()
}
