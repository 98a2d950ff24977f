package deployutil

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// specHashTemplate is the template hash example of docs/worked-numbers.md exactly as the upstream hasher
// sees it: labels {app: x} and one container c/nginx, every other field zero.
func specHashTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

func TestComputeHashMatchesUpstream(t *testing.T) {
	tests := []struct {
		name           string
		collisionCount *int32
		want           string
	}{
		{name: "no collision count", collisionCount: nil, want: "8479cb96c7"},
		{name: "collision count 1", collisionCount: ptr.To[int32](1), want: "5dcc7b8948"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ComputeHash(specHashTemplate(), tt.collisionCount); got != tt.want {
				t.Errorf("ComputeHash() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestComputeHashIsStableAndSensitive(t *testing.T) {
	base := ComputeHash(specHashTemplate(), nil)
	if again := ComputeHash(specHashTemplate(), nil); again != base {
		t.Fatalf("same template hashed to %q and %q", base, again)
	}
	changed := specHashTemplate()
	changed.Spec.Containers[0].Image = "nginx:1.27"
	if h := ComputeHash(changed, nil); h == base {
		t.Errorf("image change kept hash %q", h)
	}
	if h := ComputeHash(specHashTemplate(), ptr.To[int32](0)); h == base {
		t.Errorf("collisionCount 0 must differ from nil, both %q", h)
	}
}

// TestPodTemplateSpecHash mirrors upstream: 1000 templates differing only in a
// label value never collide.
func TestPodTemplateSpecHash(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 1000; i++ {
		tmpl := specHashTemplate()
		tmpl.Labels["i"] = strconv.Itoa(i)
		h := ComputeHash(tmpl, nil)
		if prev, ok := seen[h]; ok {
			t.Fatalf("templates %d and %d share hash %q", prev, i, h)
		}
		seen[h] = i
	}
}

func TestGenerateReplicaSetName(t *testing.T) {
	const hash = "8479cb96c7" // 10 characters
	tests := []struct {
		name           string
		deploymentName string
		hash           string
		want           string
	}{
		{name: "short name", deploymentName: "web", hash: hash, want: "web-8479cb96c7"},
		{name: "242 chars fit exactly", deploymentName: strings.Repeat("a", 242), hash: hash, want: strings.Repeat("a", 242) + "-" + hash},
		{name: "250 chars truncated to 242", deploymentName: strings.Repeat("a", 250), hash: hash, want: strings.Repeat("a", 242) + "-" + hash},
		{name: "252-char hash leaves no room, no truncation", deploymentName: "web", hash: strings.Repeat("h", 252), want: "web-" + strings.Repeat("h", 252)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerateReplicaSetName(tt.deploymentName, tt.hash)
			if got != tt.want {
				t.Errorf("GenerateReplicaSetName() = %q (len %d), want %q (len %d)", got, len(got), tt.want, len(tt.want))
			}
		})
	}
	if got := GenerateReplicaSetName(strings.Repeat("a", 250), hash); len(got) != 253 {
		t.Errorf("truncated name has %d chars, want 253", len(got))
	}
}
