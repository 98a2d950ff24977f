package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaderWatchdogTimeout is how long past a missed renewal /healthz keeps
// passing, as in kube-controller-manager: long enough to ride out an API
// server hiccup, short enough that a wedged leader gets restarted.
const leaderWatchdogTimeout = 20 * time.Second

// leaderElection campaigns for a coordination.k8s.io Lease.
type leaderElection struct {
	client    kubernetes.Interface
	namespace string
	name      string
	identity  string

	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration

	// recorder, if set, records "became leader" events on the Lease.
	recorder resourcelock.EventRecorder
	// watchdog, if set, makes /healthz fail when the leader stops renewing.
	watchdog *leaderelection.HealthzAdaptor
}

// run calls lead while this process holds the Lease, and only then.
//
// It returns nil after ctx is cancelled: lead's context is cancelled first,
// and the Lease is released only after lead has returned, so that the next
// leader never overlaps with our last writes. It returns an error when the
// Lease is lost (a leader that cannot renew must stop, and a fresh process
// campaigns again) or when lead fails or returns while still leading.
func (e *leaderElection) run(ctx context.Context, lead func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	lease := klog.KRef(e.namespace, e.name)

	// The elector gets its own context so that cancelling ctx stops lead
	// without also releasing the Lease at once.
	electionCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()

	var (
		mu       sync.Mutex
		stopping bool          // no (more) leading: shutting down or the elector has returned
		leadDone chan struct{} // closed when lead returns; nil while not leading
		leadErr  error
	)
	onStartedLeading := func(leaseCtx context.Context) {
		mu.Lock()
		if stopping {
			mu.Unlock()
			return
		}
		done := make(chan struct{})
		leadDone = done
		mu.Unlock()
		defer close(done)

		logger.Info("Started leading", "lease", lease, "identity", e.identity)
		leadCtx, cancel := context.WithCancel(leaseCtx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()

		err := lead(leadCtx)
		if err == nil && leadCtx.Err() == nil {
			err = errors.New("the controller stopped while still leading")
		}
		if err != nil {
			mu.Lock()
			leadErr = err
			mu.Unlock()
			stopElection()
		}
	}

	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta: metav1.ObjectMeta{Namespace: e.namespace, Name: e.name},
			Client:    e.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{
				Identity:      e.identity,
				EventRecorder: e.recorder,
			},
		},
		LeaseDuration:   e.leaseDuration,
		RenewDeadline:   e.renewDeadline,
		RetryPeriod:     e.retryPeriod,
		ReleaseOnCancel: true,
		Name:            e.name,
		WatchDog:        e.watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: onStartedLeading,
			OnStoppedLeading: func() {
				logger.Info("Stopped leading", "lease", lease, "identity", e.identity)
			},
			OnNewLeader: func(identity string) {
				if identity != e.identity {
					logger.Info("Another replica is leading", "lease", lease, "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election on lease %s: %w", lease, err)
	}
	if e.watchdog != nil {
		e.watchdog.SetLeaderElection(elector)
	}

	go func() {
		select {
		case <-electionCtx.Done():
			return
		case <-ctx.Done():
		}
		mu.Lock()
		stopping = true
		done := leadDone
		mu.Unlock()
		if done != nil {
			logger.Info("Shutting down: stopping the workers before releasing the lease", "lease", lease)
			<-done
		}
		stopElection()
	}()

	logger.Info("Campaigning for the leader-election lease", "lease", lease, "identity", e.identity)
	elector.Run(electionCtx)

	// The elector starts lead on its own goroutine and does not wait for it.
	mu.Lock()
	stopping = true
	done := leadDone
	mu.Unlock()
	if done != nil {
		<-done
	}

	mu.Lock()
	defer mu.Unlock()
	switch {
	case leadErr != nil:
		return leadErr
	case ctx.Err() != nil:
		return nil
	default:
		return fmt.Errorf("lost the leader-election lease %s (identity %q): exiting so that a fresh process campaigns again", lease, e.identity)
	}
}
