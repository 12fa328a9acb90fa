package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testingParams returns the names of the parameters of type *testing.T,
// *testing.B, *testing.F or testing.TB declared anywhere in f.
func testingParams(f *ast.File) map[string]bool {
	names := map[string]bool{}
	isTesting := func(e ast.Expr) bool {
		if star, ok := e.(*ast.StarExpr); ok {
			e = star.X
		}
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "testing" && (sel.Sel.Name == "T" || sel.Sel.Name == "B" || sel.Sel.Name == "F" || sel.Sel.Name == "TB")
	}
	ast.Inspect(f, func(n ast.Node) bool {
		ft, ok := n.(*ast.FuncType)
		if !ok || ft.Params == nil {
			return true
		}
		for _, p := range ft.Params.List {
			if isTesting(p.Type) {
				for _, id := range p.Names {
					names[id.Name] = true
				}
			}
		}
		return true
	})
	return names
}

// stopsGoroutine are the testing methods that end the calling goroutine:
// called anywhere but on the test goroutine they leave the test hanging or
// passing wrongly.
var stopsGoroutine = map[string]bool{
	"Fatal": true, "Fatalf": true, "FailNow": true, "Skip": true, "Skipf": true, "SkipNow": true,
}

// TestLint_NoAssertionsInSpawnedGoroutines: goroutines a test starts never
// call t.Fatal/FailNow/Skip nor pass t on (to require, assert or a helper
// that asserts); they report through a channel or a testutil.Reporter, and
// the test goroutine asserts.
func TestLint_NoAssertionsInSpawnedGoroutines(t *testing.T) {
	fset := token.NewFileSet()
	for _, gf := range parseAll(t) {
		if !gf.test {
			continue
		}
		f, err := parser.ParseFile(fset, gf.path, nil, 0)
		require.NoError(t, err)
		tNames := testingParams(f)
		ast.Inspect(f, func(n ast.Node) bool {
			g, ok := n.(*ast.GoStmt)
			if !ok {
				return true
			}
			ast.Inspect(g.Call, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && tNames[id.Name] && stopsGoroutine[sel.Sel.Name] {
						t.Errorf("%s: %s.%s in a spawned goroutine", fset.Position(call.Pos()), id.Name, sel.Sel.Name)
					}
				}
				for _, a := range call.Args {
					if id, ok := a.(*ast.Ident); ok && tNames[id.Name] {
						t.Errorf("%s: %s passed on in a spawned goroutine (assert on the test goroutine)", fset.Position(a.Pos()), id.Name)
					}
				}
				return true
			})
			return false // the go statement's subtree was checked
		})
	}
}

// outside matches references to files that are not in this repository:
// the workspace's shared/ directory (docs, fixtures, benchmark harness,
// API and style notes) and absolute workspace paths.
var outside = regexp.MustCompile(`(\.\./)?shared[/](docs|fixtures|bench|API|STYLE)|[/]work[/]`)

// TestLint_NoReferencesOutsideRepo: documentation and code stand alone.
// What a reader or a test needs is in docs/ or a testdata/ directory.
func TestLint_NoReferencesOutsideRepo(t *testing.T) {
	root := repoRoot(t)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(data), "\n") {
			if outside.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d refers outside the repository: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 50)
}
