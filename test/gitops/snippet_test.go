package gitops

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite manifests/argocd/argocd-cm.yaml from health.lua and actions.yaml")

// snippetHeader opens argocd-cm.yaml.
const snippetHeader = `# The keys kubectl-gray adds to Argo CD's argocd-cm: the Deployment health check and the
# gray-resume, gray-resume-full and gray-undo resource actions. Generated from health.lua and
# actions.yaml by "cd test/gitops && go test ./... -update"; do not edit by hand. Merge it into
# argocd-cm, e.g. kubectl -n argocd patch configmap argocd-cm --patch-file argocd-cm.yaml, or
# use this directory as a kustomize component.
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

// TestArgoCDComponentMerges builds a kustomization of Argo CD's argocd-cm with manifests/argocd
// as a component, as a user adds it, and wants both scripts merged in and the user's keys kept.
func TestArgoCDComponentMerges(t *testing.T) {
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
		"argocd-cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n  url: https://argocd.example.com\n",
		"kustomization.yaml": "resources: [argocd-cm.yaml]\ncomponents: [" + rel + "]\n",
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
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(out, &cm); err != nil {
		t.Fatal(err)
	}
	health, _ := os.ReadFile(filepath.Join(argoDir, "health.lua"))
	actions, _ := os.ReadFile(filepath.Join(argoDir, "actions.yaml"))
	if cm.Data["url"] != "https://argocd.example.com" || cm.Data["resource.customizations.health.apps_Deployment"] != string(health) ||
		cm.Data["resource.customizations.actions.apps_Deployment"] != string(actions) {
		t.Fatalf("merged argocd-cm:\n%s", out)
	}
}
