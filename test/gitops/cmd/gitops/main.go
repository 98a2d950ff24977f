// Command gitops does for the e2e suites what GitOps tools do, with their code, from a module
// of its own (Flux's libraries pin other k8s.io versions than the test module):
//
//	gitops health ARGOCD_DIR FLUX_SNIPPET < objects.jsonl   one line of results per Deployment
//	                                                        (health, and Argo CD's actions)
//	gitops flux-apply KUBECONFIG MANIFEST                   apply as kustomize-controller does
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/test/gitops"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "health":
		err = health(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "flux-apply":
		err = fluxApply(os.Args[2], os.Args[3])
	default:
		err = fmt.Errorf("usage: gitops health ARGOCD_DIR FLUX_SNIPPET < objects.jsonl | gitops flux-apply KUBECONFIG MANIFEST")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gitops:", err)
		os.Exit(1)
	}
}

// results is what each tool says of one Deployment.
type results struct {
	ArgoCD gitops.Health `json:"argocd"`
	// ArgoCDActions is each action the snippet's discovery returns and whether it is enabled
	// (gray-*, and resume, which it gates on a gray Deployment).
	ArgoCDActions map[string]bool `json:"argocdActions"`
	KStatus       gitops.Health   `json:"kstatus"`
	Flux          gitops.Health   `json:"flux"`
}

func health(argoDir, fluxSnippet string) error {
	argo, err := gitops.LoadArgoCD(argoDir)
	if err != nil {
		return err
	}
	flux, err := gitops.LoadFlux(fluxSnippet)
	if err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		// Numbers as the API server's decoder gives them (int64), which kstatus requires.
		var obj map[string]any
		if err := utiljson.Unmarshal(in.Bytes(), &obj); err != nil {
			return err
		}
		var r results
		if r.ArgoCD, err = argo.Health(obj); err != nil {
			return fmt.Errorf("argo cd: %w", err)
		}
		if r.ArgoCDActions, err = argo.Actions(obj); err != nil {
			return fmt.Errorf("argo cd actions: %w", err)
		}
		if r.KStatus, err = gitops.KStatus(obj); err != nil {
			return fmt.Errorf("kstatus: %w", err)
		}
		if r.Flux, err = flux.Health(context.Background(), obj); err != nil {
			return fmt.Errorf("flux: %w", err)
		}
		if err := out.Encode(r); err != nil {
			return err
		}
	}
	return in.Err()
}

// fluxApply applies the one object of manifest with Flux's ResourceManager, forcing conflicts
// and with kustomize-controller's field manager, as a Kustomization's reconcile does.
func fluxApply(kubeconfig, manifest string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
		return err
	}
	manager := ssa.NewResourceManager(c, nil, ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"})
	opts := ssa.DefaultApplyOptions()
	opts.Force = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entry, err := manager.Apply(ctx, obj, opts)
	if err != nil {
		return err
	}
	fmt.Println(entry.String())
	return nil
}
