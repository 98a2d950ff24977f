package graysync

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rsAt(name string, generation int64) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation}}
}

func TestReplicaSetExpectations(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	e := newReplicaSetExpectations(func() time.Time { return now })
	const key = "default/web"

	if ok, _ := e.caughtUp(key, nil); !ok {
		t.Fatal("nothing written, yet not caught up")
	}
	e.wrote(key, rsAt("web-v2", 1)) // created
	e.wrote(key, rsAt("web-v1", 4)) // resized
	if ok, missing := e.caughtUp(key, []*appsv1.ReplicaSet{rsAt("web-v1", 3), rsAt("web-v2", 1)}); ok || missing != "web-v1" {
		t.Fatalf("caughtUp = %t, %q; want false, web-v1 (cached at an older generation)", ok, missing)
	}
	if ok, missing := e.caughtUp(key, []*appsv1.ReplicaSet{rsAt("web-v1", 3)}); ok || missing != "web-v1" {
		t.Fatalf("caughtUp = %t, %q; want false, web-v1 (web-v2 was seen already)", ok, missing)
	}
	if ok, _ := e.caughtUp(key, []*appsv1.ReplicaSet{rsAt("web-v1", 5)}); !ok {
		t.Fatal("not caught up once the cache has both writes")
	}
	e.wrote(key, rsAt("web-v2", 2))
	if ok, missing := e.caughtUp(key, nil); ok || missing != "web-v2" {
		t.Fatalf("caughtUp = %t, %q; want false, web-v2 (not in the cache)", ok, missing)
	}
	e.forgetReplicaSet(key, "web-v2")

	// A ReplicaSet deleted before its write reached the cache is not waited for.
	e.wrote(key, rsAt("web-v3", 1))
	e.forgetReplicaSet(key, "web-v3")
	if ok, _ := e.caughtUp(key, nil); !ok {
		t.Fatal("a deleted ReplicaSet is still waited for")
	}
	// Nor, after the timeout, one whose write never shows.
	e.wrote(key, rsAt("web-v4", 1))
	now = now.Add(replicaSetExpectationTimeout + time.Second)
	if ok, _ := e.caughtUp(key, nil); !ok {
		t.Fatal("an expired expectation is still waited for")
	}
	e.wrote(key, rsAt("web-v5", 1))
	e.forget(key)
	if ok, _ := e.caughtUp(key, nil); !ok {
		t.Fatal("a deleted Deployment's expectations survive")
	}
}
