package graysync

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/pkg/podhealth"
)

// Port is what a gray sync uses of the upstream port (*deployment.DeploymentController), under
// upstream's names: its client, clock, caches and queue, and the steps of upstream's sync a gray
// sync shares (the new ReplicaSet, scaling, cleanup, status, rollback).
type Port interface {
	Client() kubernetes.Interface
	FieldManager() string
	EventRecorder() record.EventRecorder
	Now() time.Time
	DeploymentLister() appslisters.DeploymentLister
	ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister
	ReplicaSetsControlledBy(uid types.UID) ([]*appsv1.ReplicaSet, error)
	GetPodMapForDeployment(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error)
	PodHealth(rsUID types.UID) []podhealth.Pod
	Enqueue(d *appsv1.Deployment)
	EnqueueAfter(d *appsv1.Deployment, after time.Duration)
	EnqueueKey(key string)

	CacheFresh(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, checks deployment.CacheChecks) (context.Context, bool, error)
	SyncNewReplicaSet(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, bool, error)
	NewReplicaSet(d *appsv1.Deployment, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
	CreateNewReplicaSet(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, oldRSs []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, bool, error)
	ScaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, newScale int32, d *appsv1.Deployment, forceUpdate bool) (bool, *appsv1.ReplicaSet, error)
	CleanupDeployment(ctx context.Context, oldRSs []*appsv1.ReplicaSet, d *appsv1.Deployment) error
	CalculateStatus(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus
	CalculateRolloutStatus(ctx context.Context, allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus
	RequeueStuckDeployment(ctx context.Context, d *appsv1.Deployment, newStatus appsv1.DeploymentStatus) time.Duration
	Rollback(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error
}
