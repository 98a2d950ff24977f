package deployutil

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Annotation keys, label keys and limits; the values are the upstream ones
// because the ReplicaSets we manage must stay readable by kubectl and by the
// upstream controller.
const (
	// RevisionAnnotation records a ReplicaSet's rollout sequence number; the
	// Deployment mirrors its new ReplicaSet's value.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists earlier revisions a ReplicaSet served
	// (comma separated, oldest first) when a rollback re-used it.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's spec.replicas the last
	// time this ReplicaSet was scaled; a mismatch marks a scaling event.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is spec.replicas + maxSurge the last time this
	// ReplicaSet was scaled; the base of proportional scaling.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"
	// RollbackToAnnotation is the round-tripped form of the removed
	// spec.rollbackTo field.
	RollbackToAnnotation = appsv1.DeprecatedRollbackTo
	// LastAppliedAnnotation is kubectl apply's bookkeeping, never copied to
	// ReplicaSets.
	LastAppliedAnnotation = corev1.LastAppliedConfigAnnotation
	// DefaultPodTemplateHashKey is the label carrying the template hash on
	// ReplicaSets, their selectors and their pods.
	DefaultPodTemplateHashKey = appsv1.DefaultDeploymentUniqueLabelKey
	// RevisionHistoryMaxChars bounds RevisionHistoryAnnotation (the
	// controller's default revHistoryLimitInChars).
	RevisionHistoryMaxChars = 2000
)

// Condition reasons.
const (
	// ReplicaSetUpdatedReason: progress was observed (Progressing=True).
	ReplicaSetUpdatedReason = "ReplicaSetUpdated"
	// FailedRSCreateReason: the new ReplicaSet could not be created (Progressing=False).
	FailedRSCreateReason = "ReplicaSetCreateError"
	// NewReplicaSetReason: the new ReplicaSet was created (Progressing=True).
	NewReplicaSetReason = "NewReplicaSetCreated"
	// FoundNewRSReason: an existing new ReplicaSet was found (Progressing=True).
	FoundNewRSReason = "FoundNewReplicaSet"
	// NewRSAvailableReason: the rollout completed (Progressing=True).
	NewRSAvailableReason = "NewReplicaSetAvailable"
	// TimedOutReason: no progress within progressDeadlineSeconds (Progressing=False).
	TimedOutReason = "ProgressDeadlineExceeded"
	// PausedDeployReason: the Deployment is paused (Progressing=Unknown).
	PausedDeployReason = "DeploymentPaused"
	// ResumedDeployReason: the Deployment was resumed (Progressing=Unknown);
	// its lastUpdateTime restarts the progress deadline clock.
	ResumedDeployReason = "DeploymentResumed"
	// MinimumReplicasAvailable: Available=True.
	MinimumReplicasAvailable = "MinimumReplicasAvailable"
	// MinimumReplicasUnavailable: Available=False.
	MinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// Event reasons of the annotation-driven rollback.
const (
	RollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	RollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	RollbackDone              = "DeploymentRollback"
)
