package measure

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSecretCache: a Secret is read once per SecretTTL (30 s); a failed read is not kept.
func TestSecretCache(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	reads := 0
	version := "1"
	fail := false
	c := NewSecretCache(func(_ context.Context, name string) (*corev1.Secret, error) {
		reads++
		if fail {
			return nil, errors.New(`secrets "` + name + `" is forbidden`)
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: version}}, nil
	}, func() time.Time { return now })

	want := func(step string, wantReads int, wantVersion string) {
		t.Helper()
		s, err := c.Get(context.Background(), "webhook-key")
		switch {
		case wantVersion == "" && err == nil:
			t.Errorf("%s: read %v, want an error", step, s.ResourceVersion)
		case wantVersion != "" && (err != nil || s.ResourceVersion != wantVersion):
			t.Errorf("%s: read %v, %v; want version %s", step, s, err, wantVersion)
		}
		if reads != wantReads {
			t.Errorf("%s: %d GETs, want %d", step, reads, wantReads)
		}
	}
	want("first call", 1, "1")
	version = "2"
	now = now.Add(29 * time.Second)
	want("29 s later, the key rotated", 1, "1")
	now = now.Add(time.Second)
	want("30 s later", 2, "2")
	now = now.Add(30 * time.Second)
	fail = true
	want("refused", 3, "")
	fail = false
	want("right after the refusal", 4, "2")
}
