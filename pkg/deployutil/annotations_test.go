package deployutil

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2/ktesting"
)

func TestRevision(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    int64
		wantErr bool
	}{
		{name: "missing annotation is revision 0", ann: nil, want: 0},
		{name: "valid", ann: map[string]string{RevisionAnnotation: "7"}, want: 7},
		{name: "int64 range", ann: map[string]string{RevisionAnnotation: "9223372036854775807"}, want: math.MaxInt64},
		{name: "not a number", ann: map[string]string{RevisionAnnotation: "seven"}, wantErr: true},
		{name: "empty string is an error (only a missing key is 0)", ann: map[string]string{RevisionAnnotation: ""}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS("web-1", 1, 1, t0)
			rs.Annotations = tt.ann
			got, err := Revision(rs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Revision() error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "default/web-1") {
				t.Errorf("error %q does not name the object", err)
			}
			if got != tt.want {
				t.Errorf("Revision() = %d, want %d", got, tt.want)
			}
		})
	}
}

func rsWithRevision(name, revision string) *appsv1.ReplicaSet {
	rs := newRS(name, 0, 0, t0)
	if revision != "-" {
		rs.Annotations = map[string]string{RevisionAnnotation: revision}
	}
	return rs
}

func TestMaxAndLastRevision(t *testing.T) {
	tests := []struct {
		name      string
		revisions []string // "-" = no annotation
		wantMax   int64
		wantLast  int64
	}{
		{name: "none", revisions: nil, wantMax: 0, wantLast: 0},
		{name: "single", revisions: []string{"5"}, wantMax: 5, wantLast: 0},
		{name: "ascending", revisions: []string{"1", "2", "3"}, wantMax: 3, wantLast: 2},
		{name: "unordered", revisions: []string{"3", "1", "4", "2"}, wantMax: 4, wantLast: 3},
		{name: "shared max: last equals max", revisions: []string{"3", "3"}, wantMax: 3, wantLast: 3},
		{name: "unparsable skipped", revisions: []string{"2", "x", "9"}, wantMax: 9, wantLast: 2},
		{name: "missing counts as 0", revisions: []string{"-", "4"}, wantMax: 4, wantLast: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rss []*appsv1.ReplicaSet
			for i, r := range tt.revisions {
				rss = append(rss, rsWithRevision(fmt.Sprintf("rs-%d", i), r))
			}
			if got := MaxRevision(rss); got != tt.wantMax {
				t.Errorf("MaxRevision() = %d, want %d", got, tt.wantMax)
			}
			if got := LastRevision(rss); got != tt.wantLast {
				t.Errorf("LastRevision() = %d, want %d", got, tt.wantLast)
			}
		})
	}
}

func TestSetDeploymentRevision(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	d.Annotations = nil
	if !SetDeploymentRevision(d, "3") || d.Annotations[RevisionAnnotation] != "3" {
		t.Fatalf("first set: annotations %v", d.Annotations)
	}
	if SetDeploymentRevision(d, "3") {
		t.Errorf("setting the same revision reported a change")
	}
}

// TestSetNewReplicaSetAnnotationsRevisionBumps is upstream TestAnnotationUtils:
// revisions 11..20 on one RS with a 5-char history limit keep the last two.
func TestSetNewReplicaSetAnnotationsRevisionBumps(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := rollingDeployment(1, "1", "0")
	d.Annotations[RevisionAnnotation] = "1"
	rs := newRS("web-1", 1, 1, t0)
	wantHistory := map[int]string{11: "", 12: "11", 13: "11,12", 14: "12,13", 15: "13,14", 20: "18,19"}
	for rev := 11; rev <= 20; rev++ {
		SetNewReplicaSetAnnotations(ctx, d, rs, strconv.Itoa(rev), true, 5)
		if got := rs.Annotations[RevisionAnnotation]; got != strconv.Itoa(rev) {
			t.Fatalf("revision = %q, want %d", got, rev)
		}
		if want, ok := wantHistory[rev]; ok && rs.Annotations[RevisionHistoryAnnotation] != want {
			t.Errorf("after %d history = %q, want %q", rev, rs.Annotations[RevisionHistoryAnnotation], want)
		}
	}
	if rs.Annotations[RevisionAnnotation] == d.Annotations[RevisionAnnotation] {
		t.Errorf("the Deployment's revision must not be copied onto the RS")
	}
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		deployAnn   map[string]string
		rsAnn       map[string]string
		newRevision string
		exists      bool
		limit       int
		wantChanged bool
		wantAnn     map[string]string
	}{
		{
			name: "new RS: copies all but skip-listed keys, sets revision and replica annotations (R=10, 25% → max 13)",
			deployAnn: map[string]string{
				"team": "a", LastAppliedAnnotation: "{}", RevisionAnnotation: "9", RevisionHistoryAnnotation: "1",
				DesiredReplicasAnnotation: "99", MaxReplicasAnnotation: "99", RollbackToAnnotation: "2",
			},
			newRevision: "1", exists: false, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{"team": "a", RevisionAnnotation: "1", DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"},
		},
		{
			name:        "existing RS: keeps keys the Deployment dropped, overwrites changed values, no replica annotations",
			deployAnn:   map[string]string{"team": "b"},
			rsAnn:       map[string]string{"team": "a", "old": "x", RevisionAnnotation: "2"},
			newRevision: "2", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{"team": "b", "old": "x", RevisionAnnotation: "2"},
		},
		{
			name:        "nothing to do",
			deployAnn:   map[string]string{"team": "a"},
			rsAnn:       map[string]string{"team": "a", RevisionAnnotation: "2"},
			newRevision: "2", exists: true, limit: RevisionHistoryMaxChars, wantChanged: false,
			wantAnn: map[string]string{"team": "a", RevisionAnnotation: "2"},
		},
		{
			name:        "RS revision above the new one is kept",
			rsAnn:       map[string]string{RevisionAnnotation: "5"},
			newRevision: "3", exists: true, limit: RevisionHistoryMaxChars, wantChanged: false,
			wantAnn: map[string]string{RevisionAnnotation: "5"},
		},
		{
			name:        "rollback re-uses revision 1 as 3 and records history",
			rsAnn:       map[string]string{RevisionAnnotation: "1"},
			newRevision: "3", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"},
		},
		{
			name:        "second rollback appends to history",
			rsAnn:       map[string]string{RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"},
			newRevision: "5", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "5", RevisionHistoryAnnotation: "1,3"},
		},
		{
			name:        "missing revision: set without history",
			rsAnn:       nil,
			newRevision: "4", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "4"},
		},
		{
			name:        "empty revision counts as 0 but existed: history records the empty revision",
			rsAnn:       map[string]string{RevisionAnnotation: ""},
			newRevision: "4", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "4", RevisionHistoryAnnotation: ""},
		},
		{
			name:        "history with an empty first entry is replaced, not appended to",
			rsAnn:       map[string]string{RevisionAnnotation: "7", RevisionHistoryAnnotation: ",2"},
			newRevision: "8", exists: true, limit: RevisionHistoryMaxChars, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "8", RevisionHistoryAnnotation: "7"},
		},
		{
			name:        "unparsable RS revision: stop and report unchanged even though a key was copied",
			deployAnn:   map[string]string{"team": "a"},
			rsAnn:       map[string]string{RevisionAnnotation: "x"},
			newRevision: "4", exists: false, limit: RevisionHistoryMaxChars, wantChanged: false,
			wantAnn: map[string]string{"team": "a", RevisionAnnotation: "x"},
		},
		{
			name:        "unparsable new revision: stop and report unchanged",
			rsAnn:       map[string]string{RevisionAnnotation: "1"},
			newRevision: "next", exists: true, limit: RevisionHistoryMaxChars, wantChanged: false,
			wantAnn: map[string]string{RevisionAnnotation: "1"},
		},
		{
			name:        "history cannot fit even after dropping everything: revision bumped, history unchanged",
			rsAnn:       map[string]string{RevisionAnnotation: "1234", RevisionHistoryAnnotation: "5"},
			newRevision: "1235", exists: true, limit: 3, wantChanged: true,
			wantAnn: map[string]string{RevisionAnnotation: "1235", RevisionHistoryAnnotation: "5"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := rollingDeployment(10, "25%", "25%")
			d.Annotations = tt.deployAnn
			rs := newRS("web-1", 3, 3, t0)
			rs.Annotations = tt.rsAnn
			changed := SetNewReplicaSetAnnotations(ctx, d, rs, tt.newRevision, tt.exists, tt.limit)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if !reflect.DeepEqual(rs.Annotations, tt.wantAnn) {
				t.Errorf("annotations = %v\nwant %v", rs.Annotations, tt.wantAnn)
			}
		})
	}
}

// TestRevisionHistoryCap checks the 2000-character cap: a 1999-char history
// of 400 four-digit revisions loses its oldest entry to make room.
func TestRevisionHistoryCap(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var history, want []string
	for r := 1000; r < 1400; r++ {
		history = append(history, strconv.Itoa(r))
	}
	for r := 1001; r <= 1400; r++ {
		want = append(want, strconv.Itoa(r))
	}
	if len(strings.Join(history, ",")) != 1999 {
		t.Fatalf("fixture: history has %d chars, want 1999", len(strings.Join(history, ",")))
	}
	rs := newRS("web-1", 1, 1, t0)
	rs.Annotations = map[string]string{RevisionAnnotation: "1400", RevisionHistoryAnnotation: strings.Join(history, ",")}
	d := rollingDeployment(1, "1", "0")

	if !SetNewReplicaSetAnnotations(ctx, d, rs, "1401", true, RevisionHistoryMaxChars) {
		t.Fatalf("no change reported")
	}
	got := rs.Annotations[RevisionHistoryAnnotation]
	if got != strings.Join(want, ",") {
		t.Errorf("history starts %q… ends …%q (len %d), want 1001…1400 (len 1999)", got[:14], got[len(got)-14:], len(got))
	}
	if len(got) > RevisionHistoryMaxChars {
		t.Errorf("history has %d chars, over the cap", len(got))
	}
}

func TestSetDeploymentAnnotationsTo(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	d.Annotations = map[string]string{LastAppliedAnnotation: "L", RevisionAnnotation: "3", "a": "old", "b": "gone"}
	rs := newRS("web-1", 1, 1, t0)
	rs.Annotations = map[string]string{"a": "new", "c": "1", RevisionAnnotation: "1", DesiredReplicasAnnotation: "5"}
	SetDeploymentAnnotationsTo(d, rs)
	want := map[string]string{LastAppliedAnnotation: "L", RevisionAnnotation: "3", "a": "new", "c": "1"}
	if !reflect.DeepEqual(d.Annotations, want) {
		t.Errorf("annotations = %v, want %v", d.Annotations, want)
	}
}

func TestSetReplicasAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		ann         map[string]string
		wantChanged bool
	}{
		{name: "nil map", ann: nil, wantChanged: true},
		{name: "already equal", ann: map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "11"}, wantChanged: false},
		{name: "only max differs", ann: map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "13"}, wantChanged: true},
		{name: "only desired differs", ann: map[string]string{DesiredReplicasAnnotation: "1", MaxReplicasAnnotation: "11"}, wantChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS("web-1", 1, 1, t0)
			rs.Annotations = tt.ann
			if got := SetReplicasAnnotations(rs, 10, 11); got != tt.wantChanged {
				t.Errorf("changed = %v, want %v", got, tt.wantChanged)
			}
			if rs.Annotations[DesiredReplicasAnnotation] != "10" || rs.Annotations[MaxReplicasAnnotation] != "11" {
				t.Errorf("annotations = %v, want desired 10 max 11", rs.Annotations)
			}
		})
	}
}

func TestReplicasAnnotationsNeedUpdate(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		want bool
	}{
		{name: "annotations nil", ann: nil, want: true},
		{name: "desired differs", ann: map[string]string{DesiredReplicasAnnotation: "8", MaxReplicasAnnotation: "20"}, want: true},
		{name: "max differs", ann: map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "16"}, want: true},
		{name: "max missing", ann: map[string]string{DesiredReplicasAnnotation: "10"}, want: true},
		{name: "equal", ann: map[string]string{DesiredReplicasAnnotation: "10", MaxReplicasAnnotation: "20"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS("web-1", 1, 1, t0)
			rs.Annotations = tt.ann
			if got := ReplicasAnnotationsNeedUpdate(rs, 10, 20); got != tt.want {
				t.Errorf("ReplicasAnnotationsNeedUpdate() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNonNegativeInt32Annotations is upstream TestGetNonNegativeInt32FromAnnotation.
func TestNonNegativeInt32Annotations(t *testing.T) {
	tests := []struct {
		name      string
		value     *string
		wantValue int32
		wantOK    bool
		wantErr   string
	}{
		{name: "missing"},
		{name: "invalid", value: ptrStr("invalid"), wantErr: "invalid syntax"},
		{name: "negative", value: ptrStr("-1"), wantErr: "invalid syntax"},
		{name: "zero", value: ptrStr("0"), wantValue: 0, wantOK: true},
		{name: "valid", value: ptrStr("13"), wantValue: 13, wantOK: true},
		{name: "MaxInt32", value: ptrStr("2147483647"), wantValue: math.MaxInt32, wantOK: true},
		{name: "MaxInt32+1 out of range", value: ptrStr("2147483648"), wantErr: "out of range"},
		{name: "MaxUint32+1 out of range", value: ptrStr("4294967296"), wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			rs := newRS("web-1", 1, 1, t0)
			rs.Annotations = map[string]string{"foo": "2"}
			if tt.value != nil {
				rs.Annotations[DesiredReplicasAnnotation] = *tt.value
				rs.Annotations[MaxReplicasAnnotation] = *tt.value
			}
			v, ok, err := parseNonNegativeInt32Annotation(rs, DesiredReplicasAnnotation)
			if v != tt.wantValue || ok != tt.wantOK {
				t.Errorf("parse = (%d, %v), want (%d, %v)", v, ok, tt.wantValue, tt.wantOK)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			case err != nil && !strings.Contains(err.Error(), "replicaset default/web-1"):
				t.Errorf("error %q does not name the ReplicaSet", err)
			}
			if v, ok := GetDesiredReplicasAnnotation(ctx, rs); v != tt.wantValue || ok != tt.wantOK {
				t.Errorf("GetDesiredReplicasAnnotation = (%d, %v), want (%d, %v)", v, ok, tt.wantValue, tt.wantOK)
			}
			if v, ok := GetMaxReplicasAnnotation(ctx, rs); v != tt.wantValue || ok != tt.wantOK {
				t.Errorf("GetMaxReplicasAnnotation = (%d, %v), want (%d, %v)", v, ok, tt.wantValue, tt.wantOK)
			}
		})
	}
}

func ptrStr(s string) *string { return &s }

func TestSkipCopyAnnotation(t *testing.T) {
	for _, k := range []string{
		"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision",
		"deployment.kubernetes.io/revision-history", "deployment.kubernetes.io/desired-replicas",
		"deployment.kubernetes.io/max-replicas", "deprecated.deployment.rollback.to",
		"kubegray.io/status", "kubegray.io/resume",
	} {
		if !SkipCopyAnnotation(k) {
			t.Errorf("%s must not be copied", k)
		}
	}
	for _, k := range []string{"kubernetes.io/change-cause", "team", "kubegray.io/percent"} {
		if SkipCopyAnnotation(k) {
			t.Errorf("%s must be copied", k)
		}
	}
}

func TestRevisionHistoryContains(t *testing.T) {
	tests := []struct {
		name     string
		history  *string
		revision int64
		want     bool
	}{
		{name: "no annotation", revision: 1, want: false},
		{name: "empty annotation", history: ptrStr(""), revision: 1, want: false},
		{name: "single entry", history: ptrStr("1"), revision: 1, want: true},
		{name: "last of several", history: ptrStr("1,4"), revision: 4, want: true},
		{name: "not there", history: ptrStr("1,4"), revision: 2, want: false},
		{name: "no prefix match", history: ptrStr("12"), revision: 1, want: false},
		{name: "garbage entries are ignored", history: ptrStr("x,3"), revision: 3, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &appsv1.ReplicaSet{}
			if tt.history != nil {
				rs.Annotations = map[string]string{"deployment.kubernetes.io/revision-history": *tt.history}
			}
			if got := RevisionHistoryContains(rs, tt.revision); got != tt.want {
				t.Errorf("RevisionHistoryContains(%v, %d) = %v, want %v", tt.history, tt.revision, got, tt.want)
			}
		})
	}
}

func TestLastRevisionInHistory(t *testing.T) {
	withHistory := func(h string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{}
		if h != "" {
			rs.Annotations = map[string]string{RevisionHistoryAnnotation: h}
		}
		return rs
	}
	tests := []struct {
		history string
		want    int64
	}{
		{history: "1,3", want: 3},
		{history: "2", want: 2},
		{history: "", want: 7},
		{history: "1,x", want: 7},
	}
	for _, tt := range tests {
		if got := LastRevisionInHistory(withHistory(tt.history), 7); got != tt.want {
			t.Errorf("LastRevisionInHistory(%q, 7) = %d, want %d", tt.history, got, tt.want)
		}
	}
}
