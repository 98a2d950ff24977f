package controller

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

var checkNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func managed(manager string, op metav1.ManagedFieldsOperationType, subresource string, ago time.Duration) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(checkNow.Add(-ago))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, Time: &t, APIVersion: "apps/v1"}
}

func deploymentManagedBy(namespace, name string, entries ...metav1.ManagedFieldsEntry) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ManagedFields: entries}}
}

func replicaSetManagedBy(namespace, name string, entries ...metav1.ManagedFieldsEntry) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ManagedFields: entries}}
}

const (
	kcm    = "kube-controller-manager"
	update = metav1.ManagedFieldsOperationUpdate
	apply  = metav1.ManagedFieldsOperationApply
)

func TestBuiltinControllerWrites(t *testing.T) {
	const window = 10 * time.Minute
	tests := []struct {
		name        string
		deployments []appsv1.Deployment
		replicaSets []appsv1.ReplicaSet
		// want lists "kind namespace/name subresource minutes-ago", newest first.
		want []string
	}{
		{name: "empty cluster"},
		{
			name:        "deployment status written by the built-in controller 2m ago",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web", managed(kcm, update, "status", 2*time.Minute))},
			want:        []string{"deployment default/web status 2m"},
		},
		{
			name:        "deployment status written 11m ago is outside the window",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web", managed(kcm, update, "status", 11*time.Minute))},
		},
		{
			name:        "a write exactly one window ago still counts",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web", managed(kcm, update, "status", 10*time.Minute))},
			want:        []string{"deployment default/web status 10m"},
		},
		{
			name:        "deployment status written by gray-controller",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web", managed("gray-controller", update, "status", time.Minute))},
		},
		{
			name: "deployment spec or metadata written by kube-controller-manager (garbage collector) does not count",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web",
				managed(kcm, update, "", time.Minute))},
		},
		{
			name:        "replicaset scaled by the built-in deployment controller 1m ago",
			replicaSets: []appsv1.ReplicaSet{replicaSetManagedBy("shop", "cart-5d8c7", managed(kcm, update, "", time.Minute))},
			want:        []string{"replicaset shop/cart-5d8c7  1m"},
		},
		{
			name: "replicaset status written by the ReplicaSet controller, which keeps running, does not count",
			replicaSets: []appsv1.ReplicaSet{replicaSetManagedBy("shop", "cart-5d8c7",
				managed(kcm, update, "status", 0),
				managed("gray-controller", update, "", time.Minute))},
		},
		{
			name:        "replicaset applied (not updated) by kube-controller-manager does not count",
			replicaSets: []appsv1.ReplicaSet{replicaSetManagedBy("shop", "cart-5d8c7", managed(kcm, apply, "", time.Minute))},
		},
		{
			name: "an entry without a time does not count",
			replicaSets: []appsv1.ReplicaSet{replicaSetManagedBy("shop", "cart-5d8c7",
				metav1.ManagedFieldsEntry{Manager: kcm, Operation: update})},
		},
		{
			name:        "an entry stamped in the future (clock skew) counts",
			deployments: []appsv1.Deployment{deploymentManagedBy("default", "web", managed(kcm, update, "status", -30*time.Second))},
			want:        []string{"deployment default/web status -1m"},
		},
		{
			name: "everything found, newest first",
			deployments: []appsv1.Deployment{
				deploymentManagedBy("default", "web", managed("kubectl-client-side-apply", update, "", 0), managed(kcm, update, "status", 5*time.Minute)),
				deploymentManagedBy("default", "api", managed(kcm, update, "status", 3*time.Minute)),
				deploymentManagedBy("old", "batch", managed(kcm, update, "status", 2*time.Hour)),
			},
			replicaSets: []appsv1.ReplicaSet{
				replicaSetManagedBy("default", "web-1", managed(kcm, update, "status", 0), managed(kcm, update, "", 4*time.Minute)),
				replicaSetManagedBy("default", "api-1", managed(kcm, update, "", 3*time.Minute)),
			},
			want: []string{
				"deployment default/api status 3m",
				"replicaset default/api-1  3m",
				"replicaset default/web-1  4m",
				"deployment default/web status 5m",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range builtinControllerWrites(tt.deployments, tt.replicaSets, checkNow, window) {
				if w.Manager != kcm || w.Operation != update {
					t.Errorf("write %+v: manager and operation should be %s and %s", w, kcm, update)
				}
				minutes := int(checkNow.Sub(w.Time).Round(time.Minute).Minutes())
				if minutes == 0 && w.Time.After(checkNow) {
					minutes = -1
				}
				got = append(got, fmt.Sprintf("%s %s/%s %s %dm", w.Kind, w.Namespace, w.Name, w.Subresource, minutes))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("builtinControllerWrites():\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBuiltinControllerError(t *testing.T) {
	writes := builtinControllerWrites(
		[]appsv1.Deployment{deploymentManagedBy("default", "web", managed(kcm, update, "status", 2*time.Minute+3*time.Second))},
		[]appsv1.ReplicaSet{replicaSetManagedBy("default", "web-5d8c7", managed(kcm, update, "", 4*time.Minute))},
		checkNow, 10*time.Minute)

	want := `the built-in deployment controller of kube-controller-manager appears to be running; refusing to start in --mode=instead, where two controllers would fight over the same ReplicaSets. Recent writes by it:
  deployment default/web: status written by manager "kube-controller-manager" (Update) at 2026-11-29T09:57:57Z (2m3s ago)
  replicaset default/web-5d8c7: spec/metadata written by manager "kube-controller-manager" (Update) at 2026-11-29T09:56:00Z (4m0s ago)
To fix it, either:
  - start kube-controller-manager with --controllers=*,-deployment-controller, then start gray-controller once its last write is older than --builtin-check-window (10m0s), or
  - pass --skip-builtin-controller-check if you are sure the built-in controller is disabled`
	if got := builtinControllerError(writes, checkNow, 10*time.Minute).Error(); got != want {
		t.Errorf("error:\n%s\n\nwant:\n%s", got, want)
	}
}

func TestBuiltinControllerErrorListsAtMostFive(t *testing.T) {
	var replicaSets []appsv1.ReplicaSet
	for i := range 7 {
		replicaSets = append(replicaSets, replicaSetManagedBy("default", fmt.Sprintf("rs-%d", i), managed(kcm, update, "", time.Duration(i)*time.Minute)))
	}
	msg := builtinControllerError(builtinControllerWrites(nil, replicaSets, checkNow, 10*time.Minute), checkNow, 10*time.Minute).Error()
	if !strings.Contains(msg, "replicaset default/rs-4:") || strings.Contains(msg, "replicaset default/rs-5:") {
		t.Errorf("want the five newest (rs-0 to rs-4) listed and no more:\n%s", msg)
	}
	if !strings.Contains(msg, "  ... and 2 more\n") {
		t.Errorf("want the two left out counted:\n%s", msg)
	}
}

func TestAgeInTheFuture(t *testing.T) {
	if got, want := age(checkNow, checkNow.Add(10*time.Second)), "10s in the future: are the clocks in sync?"; got != want {
		t.Errorf("age() = %q, want %q", got, want)
	}
}

func TestCheckBuiltinController(t *testing.T) {
	web := deploymentManagedBy("default", "web", managed(kcm, update, "status", time.Minute))
	rsStatusOnly := replicaSetManagedBy("default", "web-1", managed(kcm, update, "status", time.Minute))
	tests := []struct {
		name    string
		objects []runtime.Object
		listErr error
		wantErr string
	}{
		{name: "only the ReplicaSet controller is active", objects: []runtime.Object{&rsStatusOnly}},
		{name: "the built-in deployment controller is active", objects: []runtime.Object{&web, &rsStatusOnly},
			wantErr: "deployment default/web: status written by manager \"kube-controller-manager\""},
		{name: "listing fails", listErr: errors.New("forbidden"),
			wantErr: "checking for the built-in deployment controller: listing deployments: forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			client := fake.NewClientset(tt.objects...)
			if tt.listErr != nil {
				client.PrependReactor("list", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.listErr
				})
			}
			err := checkBuiltinController(ctx, client, checkNow, 10*time.Minute)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkBuiltinController() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("checkBuiltinController() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestCheckBuiltinControllerPages follows continue tokens to the end.
func TestCheckBuiltinControllerPages(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	client := fake.NewClientset()
	pages := map[string]*appsv1.ReplicaSetList{
		"": {ListMeta: metav1.ListMeta{Continue: "page-2"},
			Items: []appsv1.ReplicaSet{replicaSetManagedBy("default", "quiet", managed(kcm, update, "status", 0))}},
		"page-2": {Items: []appsv1.ReplicaSet{replicaSetManagedBy("default", "scaled", managed(kcm, update, "", time.Minute))}},
	}
	var limits []int64
	client.PrependReactor("list", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		opts := action.(clienttesting.ListActionImpl).ListOptions
		limits = append(limits, opts.Limit)
		page, ok := pages[opts.Continue]
		if !ok {
			return true, nil, fmt.Errorf("unexpected continue token %q", opts.Continue)
		}
		return true, page, nil
	})
	err := checkBuiltinController(ctx, client, checkNow, 10*time.Minute)
	if err == nil || !strings.Contains(err.Error(), "replicaset default/scaled:") {
		t.Errorf("checkBuiltinController() = %v, want the write on the second page reported", err)
	}
	if !reflect.DeepEqual(limits, []int64{500, 500}) {
		t.Errorf("list limits = %v, want two pages of 500", limits)
	}
}
