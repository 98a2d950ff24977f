package gray

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPure fails when the package depends on a k8s.io/client-go package or its code reads the
// clock (time.Now, time.Since, time.Until): the decisions must stay functions of their facts.
func TestPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages, too few to be this package's dependencies: %q", len(deps), deps)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "k8s.io/client-go") {
			t.Errorf("the gray core depends on %s", dep)
		}
	}
	fset := token.NewFileSet()
	files := parseProductionFiles(t, fset, ".")
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
				t.Errorf("%s: time.%s reads the clock", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if len(files) == 0 {
		t.Fatal("no source file checked")
	}
}

// TestPhaseSetOnlyInCore fails when code of gray-controller outside this package sets a gray
// phase (an assignment to a Phase field, or a grayapi.Phase constant assigned or given as a
// field's value): the phases mean what this package says, in one place. The same scan must find
// this package's own settings, or it looked at nothing.
func TestPhaseSetOnlyInCore(t *testing.T) {
	fset := token.NewFileSet()
	files := parseProductionFiles(t, fset, "..")
	inCore, outside := 0, 0
	for name, f := range files {
		core := filepath.Dir(name) == filepath.Join("..", "gray")
		for _, pos := range phaseSettings(f) {
			if core {
				inCore++
				continue
			}
			outside++
			t.Errorf("%s sets a gray phase outside controller/gray", fset.Position(pos))
		}
	}
	if len(files) < 20 || inCore == 0 {
		t.Fatalf("scanned %d files under controller/ and found %d phase settings in controller/gray: the scan saw nothing", len(files), inCore)
	}
	t.Logf("%d files scanned: %d phase settings in controller/gray, %d outside", len(files), inCore, outside)
}

// phaseSettings lists where f sets a gray phase.
func phaseSettings(f *ast.File) []token.Pos {
	isPhaseConst := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "grayapi" && strings.HasPrefix(sel.Sel.Name, "Phase")
	}
	var found []token.Pos
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				sel, ok := lhs.(*ast.SelectorExpr)
				if (ok && sel.Sel.Name == "Phase") || (i < len(n.Rhs) && isPhaseConst(n.Rhs[i])) {
					found = append(found, n.Pos())
				}
			}
		case *ast.KeyValueExpr:
			if key, ok := n.Key.(*ast.Ident); ok && key.Name == "Phase" && isPhaseConst(n.Value) {
				found = append(found, n.Pos())
			}
		}
		return true
	})
	return found
}

// parseProductionFiles parses every .go file under root that is not a test, by path.
func parseProductionFiles(t *testing.T, fset *token.FileSet, root string) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		files[path] = f
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
