package gates

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestRecipesCompile parses every definition of docs/gates.md's Recipes section as
// gray-controller would, so that a recipe copied from the docs loads.
func TestRecipesCompile(t *testing.T) {
	doc, err := os.ReadFile("../../docs/gates.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile("(?s)## Recipes\n.*?```yaml\n(.*?)```").FindSubmatch(doc)
	if section == nil {
		t.Fatal("docs/gates.md has no Recipes section with a yaml block")
	}
	var recipes map[string]string
	if err := yaml.Unmarshal(section[1], &recipes); err != nil {
		t.Fatalf("the recipes are not one YAML map of definitions: %v", err)
	}
	if len(recipes) < 4 {
		t.Fatalf("%d recipes read, want every one of the section", len(recipes))
	}
	for name, text := range recipes {
		d, err := Parse(name, "docs/gates.md", text)
		if err != nil {
			t.Errorf("recipe %s: %v", name, err)
			continue
		}
		if err := d.CheckScope(DefaultNamespaceLabel); err != nil {
			t.Errorf("recipe %s: %v", name, err)
		}
		if d.Kind != KindMetric || !strings.Contains(d.Query, "$window") {
			t.Errorf("recipe %s: kind %s, query %q: want a metric gate over $window", name, d.Kind, d.Query)
		}
	}
}
