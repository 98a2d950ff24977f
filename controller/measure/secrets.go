package measure

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// SecretTTL is how long a Secret read for a provider (its signing key, CA or token) is used
// before it is read again: a rotated key reaches the calls within it, and a gate measured every
// few seconds costs one GET per Secret per TTL instead of one per measurement. The kubelet keeps
// a pod's Secrets by a TTL the same way; a watch would need list and watch, which RBAC cannot
// limit to the Secrets the admin named.
const SecretTTL = 30 * time.Second

// SecretCache reads gray-controller's Secrets by name through get, each at most once per
// SecretTTL. Failed reads are not kept. Safe for concurrent use.
type SecretCache struct {
	get func(ctx context.Context, name string) (*corev1.Secret, error)
	now func() time.Time

	mu   sync.Mutex
	read map[string]readSecret
}

type readSecret struct {
	secret *corev1.Secret
	at     time.Time
}

// NewSecretCache returns a SecretCache reading through get, timed by now.
func NewSecretCache(get func(ctx context.Context, name string) (*corev1.Secret, error), now func() time.Time) *SecretCache {
	return &SecretCache{get: get, now: now, read: map[string]readSecret{}}
}

// Get is Secret name as read within the last SecretTTL, or read now.
func (c *SecretCache) Get(ctx context.Context, name string) (*corev1.Secret, error) {
	c.mu.Lock()
	r, ok := c.read[name]
	c.mu.Unlock()
	if ok && c.now().Sub(r.at) < SecretTTL {
		return r.secret, nil
	}
	at := c.now()
	secret, err := c.get(ctx, name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.read[name] = readSecret{secret: secret, at: at}
	c.mu.Unlock()
	return secret, nil
}
