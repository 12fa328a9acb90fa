// Package lint holds tests that enforce the project's structure: the
// direction of package dependencies and that file access goes through
// internal/vfs. It has no code of its own.
package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/stratadb/strata"

// layer orders the library packages: a package may import only packages of
// a lower layer (or the same package). db is above everything; nothing in
// the library imports it.
var layer = map[string]int{
	"internal/base":        0,
	"internal/checksum":    0,
	"internal/vfs":         0,
	"prefix":               0,
	"internal/bloom":       1,
	"internal/cache":       1,
	"internal/rangedel":    1,
	"internal/record":      1,
	"internal/batch":       1,
	"internal/optionsfile": 1,
	"internal/vfs/errorfs": 1,
	"internal/iterator":    1,
	"internal/memtable":    2,
	"table":                2,
	"internal/version":     2,
	"db":                   3,
	"internal/testutil":    4, // test-only helpers
	"cmd/dbbench":          5,
	"cmd/sstdump":          5,
	"scripts/benchchart":   5,
	"internal/lint":        5,
}

// fileAccess are the os functions that touch the file system; library code
// must use internal/vfs instead, so that tests can inject faults and run in
// memory.
var fileAccess = map[string]bool{
	"Create": true, "Open": true, "OpenFile": true, "Remove": true, "RemoveAll": true,
	"Rename": true, "Mkdir": true, "MkdirAll": true, "ReadFile": true, "WriteFile": true,
	"ReadDir": true, "Truncate": true,
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Dir(filepath.Dir(dir)) // internal/lint -> root
}

type goFile struct {
	pkg  string // path relative to the module root
	path string
	test bool
	f    *ast.File
}

func parseAll(t *testing.T) []goFile {
	root := repoRoot(t)
	var out []goFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		out = append(out, goFile{pkg: filepath.ToSlash(rel), path: path, test: strings.HasSuffix(path, "_test.go"), f: f})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

// TestLint_ImportLayers: dependencies point one way, and test helpers stay
// out of non-test code.
func TestLint_ImportLayers(t *testing.T) {
	for _, gf := range parseAll(t) {
		if gf.test {
			continue
		}
		from, ok := layer[gf.pkg]
		require.True(t, ok, "package %s has no layer in internal/lint: add it", gf.pkg)
		for _, imp := range gf.f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(p, module+"/")
			if !ok {
				continue
			}
			to, known := layer[rel]
			require.True(t, known, "%s imports unknown package %s", gf.path, rel)
			require.True(t, to < from || rel == gf.pkg,
				"%s (layer %d) imports %s (layer %d): dependencies must point down", gf.path, from, rel, to)
			require.NotEqual(t, "internal/testutil", rel, "%s: testutil is for tests only", gf.path)
		}
	}
}

// TestLint_FileAccessThroughVFS: library code never calls the os package's
// file functions directly.
func TestLint_FileAccessThroughVFS(t *testing.T) {
	fset := token.NewFileSet()
	for _, gf := range parseAll(t) {
		if gf.test || layer[gf.pkg] > 3 || strings.HasPrefix(gf.pkg, "internal/vfs") {
			continue
		}
		f, err := parser.ParseFile(fset, gf.path, nil, 0)
		require.NoError(t, err)
		osName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"os"` {
				osName = "os"
				if imp.Name != nil {
					osName = imp.Name.Name
				}
			}
		}
		if osName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && fileAccess[sel.Sel.Name] {
				t.Errorf("%s: os.%s: library code must go through internal/vfs", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}
