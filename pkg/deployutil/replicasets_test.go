package deployutil

import (
	"reflect"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegray/kubectl-gray/internal/testutil"
)

func templateWith(name, nodeName string, annotations, labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName},
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	h := DefaultPodTemplateHashKey
	tests := []struct {
		name           string
		former, latter corev1.PodTemplateSpec
		want           bool
	}{
		{"same spec, same labels",
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v1", "something": "else"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v1", "something": "else"}), true},
		{"only the hash value differs",
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v1", "something": "else"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v2", "something": "else"}), true},
		{"one side has no hash label",
			templateWith("foo", "n", map[string]string{}, map[string]string{"something": "else"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v2", "something": "else"}), true},
		{"different label, same label count, one without hash",
			templateWith("foo", "n", map[string]string{}, map[string]string{"something": "else"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v2"}), false},
		{"different labels, same hash value",
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v1"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v1", "something": "else"}), false},
		{"different annotations, same labels",
			templateWith("foo", "n", map[string]string{"former": "value"}, map[string]string{h: "v1", "something": "else"}),
			templateWith("foo", "n", map[string]string{"latter": "value"}, map[string]string{h: "v1", "something": "else"}), false},
		{"different name and hash",
			templateWith("foo-1", "n", map[string]string{}, map[string]string{h: "v1", "something": "else"}),
			templateWith("foo-2", "n", map[string]string{}, map[string]string{h: "v2", "something": "else"}), false},
		{"different spec, one without hash",
			templateWith("foo-1", "n-1", map[string]string{}, map[string]string{"something": "else"}),
			templateWith("foo-2", "n-2", map[string]string{}, map[string]string{h: "v2", "something": "else"}), false},
		{"different spec, different labels",
			templateWith("foo", "n-1", map[string]string{}, map[string]string{"something": "else"}),
			templateWith("foo", "n-2", map[string]string{}, map[string]string{"nothing": "else"}), false},
		{"nil and empty annotations are semantically equal",
			templateWith("foo", "n", nil, map[string]string{h: "v1"}),
			templateWith("foo", "n", map[string]string{}, map[string]string{h: "v2"}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pair := range [][2]*corev1.PodTemplateSpec{{&tt.former, &tt.latter}, {&tt.latter, &tt.former}} {
				hashBefore := pair[0].Labels[h]
				if got := EqualIgnoreHash(pair[0], pair[1]); got != tt.want {
					t.Errorf("EqualIgnoreHash() = %v, want %v", got, tt.want)
				}
				if pair[0].Labels[h] != hashBefore {
					t.Errorf("EqualIgnoreHash modified its input labels")
				}
			}
		})
	}
}

func TestFindNewReplicaSet(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	newer := newRS("new", 1, 1, t2)        // same template, hash "new"
	newerDup := newRS("new-dup", 1, 1, t1) // same template, different hash, older
	old := newRS("old", 0, 0, t0, testutil.RSImage("nginx:0"))
	tests := []struct {
		name   string
		rsList []*appsv1.ReplicaSet
		want   *appsv1.ReplicaSet
	}{
		{name: "same template, different hash is new", rsList: []*appsv1.ReplicaSet{newer, old}, want: newer},
		{name: "oldest of several matching wins", rsList: []*appsv1.ReplicaSet{newer, old, newerDup}, want: newerDup},
		{name: "none", rsList: []*appsv1.ReplicaSet{old}, want: nil},
		{name: "empty list", rsList: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindNewReplicaSet(d, tt.rsList); got != tt.want {
				t.Errorf("FindNewReplicaSet() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFindOldReplicaSets(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	newer := newRS("new", 1, 1, t2)
	newerDup := newRS("new-dup", 0, 0, t1)
	old := newRS("old", 0, 0, t0, testutil.RSImage("nginx:0"))
	older := newRS("older", 2, 2, metav1.Time{Time: t0.Add(-1)}, testutil.RSImage("nginx:-1"))
	tests := []struct {
		name         string
		rsList       []*appsv1.ReplicaSet
		wantAll      []string
		wantRequired []string
	}{
		{name: "old ReplicaSets", rsList: []*appsv1.ReplicaSet{newer, old}, wantAll: []string{"old"}},
		{name: "no new ReplicaSet", rsList: []*appsv1.ReplicaSet{old}, wantAll: []string{"old"}},
		{name: "two 'new' ReplicaSets: the younger is old", rsList: []*appsv1.ReplicaSet{old, newer, newerDup}, wantAll: []string{"old", "new"}, wantRequired: []string{"new"}},
		{name: "empty old list", rsList: []*appsv1.ReplicaSet{newer}, wantAll: nil},
		{name: "oldest first, required only non-zero", rsList: []*appsv1.ReplicaSet{newer, old, older}, wantAll: []string{"older", "old"}, wantRequired: []string{"older"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			required, all := FindOldReplicaSets(d, tt.rsList)
			if got := names(all); !reflect.DeepEqual(got, tt.wantAll) {
				t.Errorf("all old = %v, want %v", got, tt.wantAll)
			}
			if got := names(required); !reflect.DeepEqual(got, tt.wantRequired) {
				t.Errorf("required old = %v, want %v", got, tt.wantRequired)
			}
		})
	}
}

func TestFilterActiveReplicaSets(t *testing.T) {
	in := []*appsv1.ReplicaSet{newRS("a", 0, 0, t0), nil, newRS("b", 2, 0, t0), newRS("c", 1, 0, t0)}
	if got := names(FilterActiveReplicaSets(in)); !reflect.DeepEqual(got, []string{"b", "c"}) {
		t.Errorf("FilterActiveReplicaSets() = %v, want [b c]", got)
	}
}

func TestGetDeploymentsForReplicaSet(t *testing.T) {
	dep := func(name, ns string, sel *metav1.LabelSelector) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Selector: sel}}
	}
	match := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	deployments := []*appsv1.Deployment{
		dep("d0", "test", match("test-0")),
		dep("d1", "test", match("test-1")),
		dep("d2", "test", match("test-2")),
		dep("d1-other-ns", "other", match("test-1")),
		dep("empty-selector", "test", &metav1.LabelSelector{}),
		dep("nil-selector", "test", nil),
		dep("invalid-selector", "test", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}),
		dep("d1-expr", "test", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"test-1"}}}}),
	}
	rs := func(app string, labels bool) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "rs-" + app}}
		if labels {
			r.Labels = map[string]string{"app": app, "label": "x"}
		}
		return r
	}
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		want []string
	}{
		{name: "rs-0", rs: rs("test-0", true), want: []string{"d0"}},
		{name: "rs-1 matches two, same namespace only", rs: rs("test-1", true), want: []string{"d1", "d1-expr"}},
		{name: "rs-2", rs: rs("test-2", true), want: []string{"d2"}},
		{name: "no match", rs: rs("test-3", true), want: nil},
		{name: "RS without labels matches nothing", rs: rs("test-0", false), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, d := range GetDeploymentsForReplicaSet(tt.rs, deployments) {
				got = append(got, d.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GetDeploymentsForReplicaSet() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReplicaSetSorts(t *testing.T) {
	withRev := func(rs *appsv1.ReplicaSet, rev string) *appsv1.ReplicaSet {
		if rev == "-" {
			return rs
		}
		testutil.RSAnnotation(RevisionAnnotation, rev)(rs)
		return rs
	}
	build := func() []*appsv1.ReplicaSet {
		return []*appsv1.ReplicaSet{
			withRev(newRS("b", 2, 0, t1), "4"),
			withRev(newRS("a", 2, 0, t1), "2"),
			withRev(newRS("c", 5, 0, t2), "x"),
			withRev(newRS("d", 1, 0, t0), "3"),
			withRev(newRS("e", 2, 0, t0), "-"),
		}
	}
	tests := []struct {
		name string
		sort func([]*appsv1.ReplicaSet)
		want []string
	}{
		{name: "by creation timestamp, name", sort: func(r []*appsv1.ReplicaSet) { sort.Sort(ReplicaSetsByCreationTimestamp(r)) }, want: []string{"d", "e", "a", "b", "c"}},
		{name: "newest first", sort: SortNewestFirst, want: []string{"c", "b", "a", "e", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss := build()
			tt.sort(rss)
			if got := names(rss); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order = %v, want %v", got, tt.want)
			}
		})
	}
	// By revision, without the unparsable c: e has none (0), then a 2, d 3, b 4.
	byRev := build()
	byRev = append(byRev[:2], byRev[3:]...)
	sort.Sort(ReplicaSetsByRevision(byRev))
	if got := names(byRev); !reflect.DeepEqual(got, []string{"e", "a", "d", "b"}) {
		t.Errorf("by revision = %v, want [e a d b]", got)
	}
	// Equal or unparsable revisions fall back to creation time.
	same := []*appsv1.ReplicaSet{withRev(newRS("late", 0, 0, t2), "1"), withRev(newRS("early", 0, 0, t0), "1"), withRev(newRS("bad", 0, 0, t1), "x")}
	sort.Sort(ReplicaSetsByRevision(same))
	if got := names(same); !reflect.DeepEqual(got, []string{"early", "bad", "late"}) {
		t.Errorf("revision ties = %v, want [early bad late]", got)
	}
}

func TestCloneAndAddLabel(t *testing.T) {
	orig := map[string]string{"app": "web"}
	got := CloneAndAddLabel(orig, DefaultPodTemplateHashKey, "abc")
	if !reflect.DeepEqual(got, map[string]string{"app": "web", DefaultPodTemplateHashKey: "abc"}) {
		t.Errorf("CloneAndAddLabel() = %v", got)
	}
	if len(orig) != 1 {
		t.Errorf("original labels modified: %v", orig)
	}
	if got := CloneAndAddLabel(nil, "k", "v"); !reflect.DeepEqual(got, map[string]string{"k": "v"}) {
		t.Errorf("CloneAndAddLabel(nil) = %v", got)
	}
	if got := CloneAndAddLabel(orig, "", "v"); !reflect.DeepEqual(got, orig) {
		t.Errorf("empty key should return the labels unchanged, got %v", got)
	}
	if got := CloneAndRemoveLabel(map[string]string{"app": "web", "k": "v"}, "k"); !reflect.DeepEqual(got, map[string]string{"app": "web"}) {
		t.Errorf("CloneAndRemoveLabel() = %v", got)
	}
}

func TestCloneSelectorAndAddLabel(t *testing.T) {
	orig := &metav1.LabelSelector{
		MatchLabels:      map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"fe"}}},
	}
	got := CloneSelectorAndAddLabel(orig, DefaultPodTemplateHashKey, "abc")
	want := &metav1.LabelSelector{
		MatchLabels:      map[string]string{"app": "web", DefaultPodTemplateHashKey: "abc"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"fe"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CloneSelectorAndAddLabel() = %+v, want %+v", got, want)
	}
	got.MatchExpressions[0].Values[0] = "changed"
	if len(orig.MatchLabels) != 1 || orig.MatchExpressions[0].Values[0] != "fe" {
		t.Errorf("original selector shares memory with the clone: %+v", orig)
	}
	if got := CloneSelectorAndAddLabel(&metav1.LabelSelector{}, "k", "v"); !reflect.DeepEqual(got, &metav1.LabelSelector{MatchLabels: map[string]string{"k": "v"}}) {
		t.Errorf("empty selector clone = %+v", got)
	}
}

func TestSetFromReplicaSetTemplate(t *testing.T) {
	d := rollingDeployment(1, "1", "0")
	rs := newRS("web-abc", 1, 1, t0, testutil.RSImage("nginx:0"))
	SetFromReplicaSetTemplate(d, rs.Spec.Template)
	if _, ok := d.Spec.Template.Labels[DefaultPodTemplateHashKey]; ok {
		t.Errorf("hash label copied into the Deployment template")
	}
	if _, ok := rs.Spec.Template.Labels[DefaultPodTemplateHashKey]; !ok {
		t.Errorf("hash label removed from the ReplicaSet template")
	}
	if d.Spec.Template.Spec.Containers[0].Image != "nginx:0" {
		t.Errorf("image = %q, want nginx:0", d.Spec.Template.Spec.Containers[0].Image)
	}
}
