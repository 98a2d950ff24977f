package alongside

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// Controller is alongside mode inside the gray sync: the takeover, the freeze, the
// view of a taken-over Deployment and our writes of it.
type Controller struct {
	client       kubernetes.Interface
	fieldManager string
	recorder     record.EventRecorder
	// takeover is how Deployments are taken over: grayapi.TakeoverAdmission or TakeoverEager.
	takeover grayapi.Takeover
	host     Host
}

// Config is what New needs; every field is required.
type Config struct {
	Client       kubernetes.Interface
	FieldManager string
	Recorder     record.EventRecorder
	Takeover     grayapi.Takeover
	Host         Host
}

// New returns alongside mode for the gray sync cfg.Host.
func New(cfg Config) *Controller {
	return &Controller{client: cfg.Client, fieldManager: cfg.FieldManager, recorder: cfg.Recorder, takeover: cfg.Takeover, host: cfg.Host}
}

// Host is what alongside mode uses of the gray sync it runs in (controller/graysync).
type Host interface {
	// RunGray runs the gray sync of a taken-over d, seen through view, and says how it ended:
	// nil when a cache was behind and nothing was done.
	RunGray(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, view *View) (*Outcome, error)
	// LiveFresh reports whether the cached d is the server's version (one live read); a sync
	// that is not fresh does nothing, and the informer's event for the newer version syncs d
	// again.
	LiveFresh(ctx context.Context, key string, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error)
	// MarkStable and MirrorRecord keep the durable record of d's stable revision on its
	// ReplicaSets (a later rollback keeps the opt-in and finds the stable one).
	MarkStable(ctx context.Context, d *appsv1.Deployment, stable *appsv1.ReplicaSet, rsList []*appsv1.ReplicaSet) error
	MirrorRecord(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error
	// PatchReplicaSetMeta sets (or, for a nil value, removes) labels or annotations of rs.
	PatchReplicaSetMeta(ctx context.Context, rs *appsv1.ReplicaSet, field string, values map[string]any) (*appsv1.ReplicaSet, error)
	// ReplicaSets lists the cached ReplicaSets of a namespace that match selector.
	ReplicaSets(namespace string, selector labels.Selector) ([]*appsv1.ReplicaSet, error)
	// Now is the controller's clock.
	Now() time.Time
}

// Outcome is how the gray sync of a taken-over Deployment ended.
type Outcome struct {
	// Status is the gray status the sync recorded.
	Status grayapi.Status
	// Server is the Deployment as the server has it after the sync's writes.
	Server *appsv1.Deployment
	// ReplicaSets are the Deployment's ReplicaSets as the sync left them.
	ReplicaSets []*appsv1.ReplicaSet
}
