package graysync

// The gates' definitions and measurements for a gray sync (docs/gates.md): a gate named on a
// Deployment is defined by a key of a ConfigMap labelled kubegray.io/gates=true in its
// namespace, else in gray-controller's own namespace, else built in (pods). controller/gray
// decides what the measurements mean.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubegray/kubectl-gray/controller/deployment"
	"github.com/kubegray/kubectl-gray/controller/gray"
	"github.com/kubegray/kubectl-gray/controller/metrics"
	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// gateBook finds gate definitions and the providers metric gates name. It watches only
// ConfigMaps labelled kubegray.io/gates (=true: definitions, in every namespace watched and
// gray-controller's; =providers: providers, in gray-controller's namespace alone), caches of each
// what gates.TrimConfigMap keeps, and keeps each one's definitions parsed (CEL compiled) until
// the ConfigMap changes.
type gateBook struct {
	// definitions reads a namespace's gate definitions; providers gray-controller's namespace's
	// providers ConfigMaps.
	definitions interface {
		ConfigMaps(namespace string) corelisters.ConfigMapNamespaceLister
	}
	providers corelisters.ConfigMapNamespaceLister
	synced    cache.InformerSynced
	// namespace is gray-controller's: its ConfigMaps define cluster-wide defaults and the
	// providers.
	namespace string
	// flagged are the providers given by flags (--prometheus-url).
	flagged map[string]*gates.Provider

	mu     sync.Mutex
	parsed map[types.UID]parsedConfigMap
}

// parsedConfigMap is one version of a ConfigMap's definitions, each parsed or refused.
type parsedConfigMap struct {
	resourceVersion string
	// values hold a *gates.Definition or a *gates.Provider by key, as the ConfigMap's label says.
	values map[string]any
	errs   map[string]error
}

// newGateBook registers a labelled ConfigMap informer on each of the caches' factories (every
// namespace, or each watched one and gray-controller's own); onChange is called with the namespace
// of every ConfigMap added, changed or deleted.
func newGateBook(caches deployment.Informers, flagged []*gates.Provider, onChange func(namespace string)) (*gateBook, error) {
	namespace := caches.Own()
	b := &gateBook{namespace: namespace, flagged: map[string]*gates.Provider{}, parsed: map[types.UID]parsedConfigMap{}}
	for _, p := range flagged {
		b.flagged[p.Name] = p
	}
	changed := func(obj any) {
		if cm, ok := deployment.DeletedObject[*corev1.ConfigMap](obj); ok {
			onChange(cm.Namespace)
		}
	}
	lister, synced, err := caches.ConfigMaps(func(ns string, factory informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
		selector := configMapSelector(ns, namespace, caches.WatchesAll())
		informer := factory.InformerFor(&corev1.ConfigMap{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewFilteredConfigMapInformer(client, ns, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
				func(o *metav1.ListOptions) { o.LabelSelector = selector })
		})
		if err := informer.SetTransform(gates.TrimConfigMap); err != nil {
			return nil, fmt.Errorf("installing the gate configmap cache transform: %w", err)
		}
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    changed,
			UpdateFunc: func(_, newObj any) { changed(newObj) },
			DeleteFunc: func(obj any) {
				if cm, ok := deployment.DeletedObject[*corev1.ConfigMap](obj); ok {
					b.mu.Lock()
					delete(b.parsed, cm.UID)
					b.mu.Unlock()
				}
				changed(obj)
			},
		}); err != nil {
			return nil, fmt.Errorf("adding gate configmap event handler: %w", err)
		}
		return informer, nil
	})
	if err != nil {
		return nil, err
	}
	b.definitions, b.providers, b.synced = lister, lister.Own(), synced
	return b, nil
}

// configMapSelector is the label selector of the ConfigMap informer of namespace ns (own is
// gray-controller's). Providers are listed in own alone, so that the API server sends the
// controller no tenant's ConfigMap labelled as providers; definitions everywhere else, and in
// own too unless the informer of every namespace (everyNamespace) lists them already.
func configMapSelector(ns, own string, everyNamespace bool) string {
	definitions, providers := grayapi.GatesLabel+"="+grayapi.GatesLabelValue, grayapi.GatesLabel+"="+grayapi.ProvidersLabelValue
	switch {
	case ns != own:
		return definitions
	case everyNamespace:
		return providers
	}
	return fmt.Sprintf("%s in (%s,%s)", grayapi.GatesLabel, grayapi.GatesLabelValue, grayapi.ProvidersLabelValue)
}

// namedGates are the gates a Deployment names, resolved.
type namedGates struct {
	// defs are their definitions, gates first, then the dry runs not among them; dryRun names
	// those only measured; providers are the metric gates' providers, by gate name.
	defs      []*gates.Definition
	dryRun    map[string]bool
	providers map[string]*gates.Provider
}

// resolve finds the definitions of the gates p names and the providers of the metric gates. The
// error names the gate and why it has no definition, or no provider it may use.
func (b *gateBook) resolve(namespace string, p grayapi.Policy) (namedGates, error) {
	names := slices.Clone(p.Gates)
	n := namedGates{dryRun: map[string]bool{}, providers: map[string]*gates.Provider{}}
	for _, name := range p.DryRunGates {
		n.dryRun[name] = true
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) > grayapi.MaxGates {
		return namedGates{}, fmt.Errorf("%s and %s name %d gates together, at most %d allowed", grayapi.GatesAnnotation, grayapi.GatesDryRunAnnotation, len(names), grayapi.MaxGates)
	}
	for _, name := range names {
		def, err := b.find(namespace, name)
		if err != nil {
			return namedGates{}, err
		}
		n.defs = append(n.defs, def)
		if def.Kind == gates.KindPods {
			continue
		}
		provider, err := b.usable(namespace, def)
		if err != nil {
			return namedGates{}, fmt.Errorf("gate %q (%s): %w", def.Name, def.Source, err)
		}
		n.providers[def.Name] = provider
	}
	return n, nil
}

// usable is the provider gate def of namespace names, if def can use it (CheckProvider) and it
// serves the namespace.
func (b *gateBook) usable(namespace string, def *gates.Definition) (*gates.Provider, error) {
	provider, err := b.provider(def.Provider)
	if err != nil {
		return nil, err
	}
	if err := def.CheckProvider(provider); err != nil {
		return nil, err
	}
	if !provider.Allows(namespace) {
		return nil, fmt.Errorf("provider %q (%s) does not serve namespace %s: its allowedNamespaces are %s", provider.Name, provider.Source, namespace,
			strings.Join(provider.AllowedNamespaces, ", "))
	}
	return provider, nil
}

// provider is provider name: a key of a ConfigMap labelled kubegray.io/gates=providers in
// gray-controller's namespace, or one given by a flag; defined twice is an error.
func (b *gateBook) provider(name string) (*gates.Provider, error) {
	cms, err := b.providers.List(labels.SelectorFromSet(labels.Set{grayapi.GatesLabel: grayapi.ProvidersLabelValue}))
	if err != nil {
		return nil, err
	}
	found, err := gates.FindProvider(name, b.flagged[name], cms, func(cm *corev1.ConfigMap) (*gates.Provider, error) {
		return cachedParse(b, cm, name, gates.ParseProvider)
	})
	switch {
	case err != nil:
		return nil, err
	case found == nil:
		return nil, fmt.Errorf("provider %q is not one gray-controller has: define it in a ConfigMap labelled %s=%s in namespace %s (docs/gates.md)",
			name, grayapi.GatesLabel, grayapi.ProvidersLabelValue, b.namespace)
	}
	return found, nil
}

// find is gate name's definition for a Deployment of namespace (gates.Find), parsed once per
// version of its ConfigMap.
func (b *gateBook) find(namespace, name string) (*gates.Definition, error) {
	list := func(ns string) ([]*corev1.ConfigMap, error) {
		return b.definitions.ConfigMaps(ns).List(labels.SelectorFromSet(labels.Set{grayapi.GatesLabel: grayapi.GatesLabelValue}))
	}
	return gates.Find(name, namespace, b.namespace, list, func(cm *corev1.ConfigMap) (*gates.Definition, error) {
		return cachedParse(b, cm, name, gates.Parse)
	})
}

// cachedParse is key name of cm read by parse (a definition or a provider), from the cache
// while cm is unchanged: the gates of a Deployment are resolved on every one of its syncs.
func cachedParse[T any](b *gateBook, cm *corev1.ConfigMap, name string, parse func(name, source, text string) (T, error)) (T, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.parsed[cm.UID]
	if !ok || p.resourceVersion != cm.ResourceVersion {
		p = parsedConfigMap{resourceVersion: cm.ResourceVersion, values: map[string]any{}, errs: map[string]error{}}
		b.parsed[cm.UID] = p
	}
	if v, ok := p.values[name].(T); ok {
		return v, nil
	}
	if err, ok := p.errs[name]; ok {
		var none T
		return none, err
	}
	v, err := parse(name, gates.SourceOf(cm, name), cm.Data[name])
	if err != nil {
		p.errs[name] = err
		return v, err
	}
	p.values[name] = v
	return v, nil
}

// enqueueGated queues the gray Deployments of namespace (of every namespace when it is
// gray-controller's) that name gates: a definition they read changed.
func (gs *Controller) enqueueGated(logger klog.Logger, namespace string) {
	if namespace == gs.gates.namespace {
		namespace = metav1.NamespaceAll
	}
	ds, err := gs.port.DeploymentLister().Deployments(namespace).List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing Deployments for a gate definition change", "namespace", namespace)
		return
	}
	for _, d := range ds {
		_, gated := d.Annotations[grayapi.GatesAnnotation]
		_, dry := d.Annotations[grayapi.GatesDryRunAnnotation]
		// Not isGray: a Deployment alongside mode has taken over runs Recreate while its rollout
		// runs, and one stopped Invalid by an undefined gate must see the definition come.
		_, gray := d.Annotations[grayapi.PercentAnnotation]
		if (gated || dry) && gray {
			gs.port.Enqueue(d)
		}
	}
}

// takeGates keeps the gates as decided for the writes to record, and has the measurements they
// ask for taken off the sync path (most syncs ask for none: nothing more is looked up then).
func (g *graySync) takeGates(v gray.GateDecision) {
	g.gates = v
	if len(v.Requests) > 0 {
		stable := gray.StableToGoBackTo(g.cur.oldRSs, g.st.StableRevision)
		g.gs.askMeasurements(g.cur.d, g.st, g.cur.newRS, stable, g.in.gates, v.Requests)
	}
}

// gatesWritten sends the gates' events of this sync and counts its measurements once a write has
// recorded them (the hold write or the report), and forgets them. The hold write of a resume is
// such a write: the report after it may conflict, and the next sync, reading the next step,
// would never say that the hold's gates had passed.
func (g *graySync) gatesWritten(ctx context.Context) error {
	if err := g.emit(ctx, g.gates.Events); err != nil {
		return err
	}
	for _, m := range g.gates.Measured {
		metrics.RecordGateMeasurement(m.Outcome, m.DryRun)
	}
	g.gates.Events, g.gates.Measured = nil, nil
	return nil
}
