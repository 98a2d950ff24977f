package grayapi

import "testing"

func TestIsGrayAnnotation(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want bool
	}{
		{name: "percent", key: "kubegray.io/percent", want: true},
		{name: "status", key: "kubegray.io/status", want: true},
		{name: "revision", key: "deployment.kubernetes.io/revision", want: false},
		{name: "look-alike domain", key: "notkubegray.io/percent", want: false},
		{name: "subdomain", key: "x.kubegray.io/percent", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsGrayAnnotation(tt.key); got != tt.want {
				t.Fatalf("IsGrayAnnotation(%q) = %v, want %v", tt.key, got, tt.want)
			}
		})
	}
}

func TestIsEventReason(t *testing.T) {
	for _, r := range []string{"GrayHeld", "GrayResumed", "GrayInvalid", "GrayTakeover", "GrayRelease", "GrayRolledBack", "GrayComplete", "GrayResumeIgnored", "GrayDegraded"} {
		if !IsEventReason(r) {
			t.Errorf("IsEventReason(%q) = false", r)
		}
	}
	for _, r := range []string{"", "ScalingReplicaSet", "GrayPaused"} {
		if IsEventReason(r) {
			t.Errorf("IsEventReason(%q) = true", r)
		}
	}
}
