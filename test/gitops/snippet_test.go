package gitops

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

var update = flag.Bool("update", false, "rewrite manifests/argocd/argocd-cm.yaml from health.lua and actions.yaml")

// snippetHeader opens argocd-cm.yaml.
const snippetHeader = `# The keys kubectl-gray adds to Argo CD's argocd-cm: the Deployment health check and the
# gray-resume, gray-resume-full, gray-abort, gray-retry and gray-undo resource actions, next to
# Argo CD's built-in ones. Generated from health.lua and actions.yaml by "cd test/gitops && go
# test ./... -update"; do not edit by hand. Merge it into argocd-cm, e.g. kubectl -n argocd
# patch configmap argocd-cm --patch-file argocd-cm.yaml, or use this directory as a kustomize
# component.
`

// TestArgoCDConfigMapSnippet keeps argocd-cm.yaml the verbatim packaging of the two scripts.
func TestArgoCDConfigMapSnippet(t *testing.T) {
	keys := []struct{ key, file string }{
		{"resource.customizations.health.apps_Deployment", "health.lua"},
		{"resource.customizations.actions.apps_Deployment", "actions.yaml"},
	}
	var b strings.Builder
	b.WriteString(snippetHeader + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n")
	for _, k := range keys {
		raw, err := os.ReadFile(filepath.Join(argoDir, k.file))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("  " + k.key + ": |\n")
		for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
			if line == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("    " + line + "\n")
		}
	}
	path := filepath.Join(argoDir, "argocd-cm.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != b.String() {
		t.Fatalf("%s is not the packaging of health.lua and actions.yaml; run go test ./... -update in test/gitops", path)
	}
	// And it is a ConfigMap whose values are the files themselves.
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(got, &cm); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		raw, _ := os.ReadFile(filepath.Join(argoDir, k.file))
		if cm.Data[k.key] != string(raw) {
			t.Errorf("argocd-cm.yaml's %s differs from %s", k.key, k.file)
		}
	}
}

// TestArgoCDComponentMerges builds kustomizations with manifests/argocd as a component, as users
// add it, and wants both scripts merged into argocd-cm and the keys already there kept: Argo CD's
// own install manifest (whose argocd-cm has no namespace) under a kustomization that sets
// `namespace: argocd`, as Argo CD's docs install it, and an argocd-cm that carries its namespace.
func TestArgoCDComponentMerges(t *testing.T) {
	install, err := os.ReadFile(filepath.Join(argoCDModuleDir(t), "manifests", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, resource, kustomization string
		// keep is a key of argocd-cm before the merge that must stay.
		keep string
	}{
		{name: "Argo CD's install.yaml, namespace set by the kustomization", resource: string(install),
			kustomization: "namespace: argocd\n", keep: "resource.exclusions"},
		{name: "an argocd-cm with its namespace",
			resource: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n  url: https://argocd.example.com\n",
			keep:     "url"},
	}
	health, _ := os.ReadFile(filepath.Join(argoDir, "health.lua"))
	actions, _ := os.ReadFile(filepath.Join(argoDir, "actions.yaml"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := buildWithComponent(t, tt.resource, tt.kustomization)
			if cm.Namespace != "argocd" || cm.Data[tt.keep] == "" || cm.Data["resource.customizations.health.apps_Deployment"] != string(health) ||
				cm.Data["resource.customizations.actions.apps_Deployment"] != string(actions) {
				t.Fatalf("merged argocd-cm in namespace %q, keys %v; want namespace argocd, %s kept and both scripts", cm.Namespace, slices.Sorted(maps.Keys(cm.Data)), tt.keep)
			}
		})
	}
}

// buildWithComponent runs kubectl kustomize on a kustomization of resource (YAML documents) with
// manifests/argocd as a component and the extra fields in kustomization, and returns the argocd-cm
// it builds.
func buildWithComponent(t *testing.T, resource, kustomization string) corev1.ConfigMap {
	t.Helper()
	dir := t.TempDir()
	component, err := filepath.Abs(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, component)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"resources.yaml":     resource,
		"kustomization.yaml": kustomization + "resources: [resources.yaml]\ncomponents: [" + rel + "]\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("kubectl", "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.Unmarshal([]byte(doc), &cm); err == nil && cm.Kind == "ConfigMap" && cm.Name == "argocd-cm" {
			return cm
		}
	}
	t.Fatalf("no argocd-cm in the build:\n%.2000s", out)
	return corev1.ConfigMap{}
}

// argoCDModule is the Argo CD release whose built-in Deployment actions the snippet is tested
// next to: the newest whose module this repository's Go can download (v3.6 asks for Go 1.27).
const argoCDModule = "github.com/argoproj/argo-cd/v3@v3.5.7"

// argoCDModuleDir downloads argoCDModule into the module cache (a module zip carries the Lua
// scripts and the install manifests too) and returns its folder. Argo CD's files are read where
// Go keeps them, never copied into this repository.
func argoCDModuleDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", argoCDModule)
	cmd.Dir = t.TempDir() // outside this module, whose go.mod and go.sum it must not touch
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Error != "" || m.Dir == "" {
		t.Fatalf("go mod download %s: %v %s %s", argoCDModule, err, m.Error, out)
	}
	return m.Dir
}

// argoCDBuiltinActions is the folder of argoCDModule's built-in Deployment actions.
func argoCDBuiltinActions(t *testing.T) string {
	return filepath.Join(argoCDModuleDir(t), "resource_customizations", "apps", "Deployment", "actions")
}

// TestArgoCDKeepsBuiltinActions loads Argo CD's built-in Deployment actions next to the
// snippet's, as Argo CD merges them, and wants both offered: the snippet asks for the merge
// (without it Argo CD drops restart, pause, resume and scale) and no name of ours hides one of
// theirs.
func TestArgoCDKeepsBuiltinActions(t *testing.T) {
	argo, err := LoadArgoCD(argoDir)
	if err != nil {
		t.Fatal(err)
	}
	if !argo.mergeBuiltin {
		t.Fatalf("%s does not set mergeBuiltinActions: true; Argo CD would drop its built-in Deployment actions", filepath.Join(argoDir, "actions.yaml"))
	}
	known := []string{"restart", "pause", "resume", "scale"}
	for _, name := range argo.ActionNames() {
		if slices.Contains(known, name) {
			t.Errorf("action %s of the snippet takes the place of Argo CD's built-in %s", name, name)
		}
	}
	dir := argoCDBuiltinActions(t)
	if err := argo.LoadBuiltinActions(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var builtin []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "action.lua")); e.IsDir() && err == nil {
			builtin = append(builtin, e.Name())
		}
	}
	for _, name := range known {
		if !slices.Contains(builtin, name) {
			t.Errorf("%s has no built-in action %s (found %v)", argoCDModule, name, builtin)
		}
	}
	for _, name := range argo.ActionNames() {
		if slices.Contains(builtin, name) {
			t.Errorf("action %s of the snippet takes the place of Argo CD's built-in %s", name, name)
		}
	}

	tests := []struct {
		name string
		opts []func(map[string]any)
		want map[string]bool
	}{
		// Argo CD's own rules: pause while not paused, resume while paused.
		{name: "plain", want: map[string]bool{"restart": true, "pause": true, "resume": false, "scale": true}},
		{name: "plain, paused", opts: phases(paused), want: map[string]bool{"restart": true, "pause": false, "resume": true, "scale": true}},
		// On a gray Deployment our discovery's resume entry takes the place of the built-in one:
		// enabled only while gray-controller serves the unpause.
		{name: "held, instead mode: the unpause leaves our hold", opts: append(phases(held...), recorded(grayapi.PhaseHeld, 20, 2, 0, true, next, full, abort, undo, unpause)),
			want: map[string]bool{"restart": true, "pause": false, "resume": true, "scale": true,
				"gray-resume": true, "gray-resume-full": true, "gray-undo": true, "gray-abort": true, "gray-retry": false}},
		{name: "held, taken over: the unpause is refused", opts: append(phases(held...), takenOver), want: map[string]bool{"restart": true, "pause": false,
			"resume": false, "scale": true, "gray-resume": true, "gray-resume-full": true, "gray-undo": true, "gray-abort": true, "gray-retry": false}},
		{name: "aborted", opts: aborted, want: map[string]bool{"restart": true, "pause": false, "resume": false, "scale": true,
			"gray-resume": false, "gray-resume-full": false, "gray-undo": true, "gray-abort": false, "gray-retry": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := argo.Actions(deployment(tt.opts...))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("actions %v, want %v", got, tt.want)
			}
			for name, enabled := range tt.want {
				if e, ok := got[name]; !ok || e != enabled {
					t.Errorf("action %s enabled %t (offered %t), want %t (all: %v)", name, e, ok, enabled, got)
				}
			}
		})
	}
}
