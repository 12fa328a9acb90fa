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
	"internal/invariants":  -1, // below internal/offheap, which checks it
	"internal/base":        0,
	"internal/checksum":    0,
	"internal/killpoint":   0,
	"internal/vfs":         0,
	"prefix":               0,
	"internal/offheap":     0, // below internal/cache, whose slabs it maps
	"internal/bloom":       1,
	"internal/cache":       1,
	"internal/rangedel":    1,
	"internal/record":      1,
	"internal/batch":       1,
	"internal/blob":        1,
	"internal/optionsfile": 1,
	"internal/vfs/errorfs": 1,
	"vfs":                  1, // the public face of internal/vfs
	"internal/iterator":    1,
	"internal/memtable":    2,
	"table":                2,
	"internal/version":     2,
	"db":                   3,
	"internal/testutil":    4, // test-only helpers
	"stress":               4, // the harness behind cmd/stress (a tool above the library, not API)
	"tool":                 4, // the verbs of cmd/strata, importable by users
	"bench/dbgen":          4, // db_bench's key and value streams, for cmd/dbbench and bench/peers (not API)
	"cmd/dbbench":          5,
	"cmd/sstdump":          5,
	"cmd/strata":           5,
	"internal/lint":        5,
	"cmd/stress":           5,
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
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // a nested module has its own rules
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
			// Tests, tools and commands above db may use the os package.
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

// TestLint_ExportedAPIUsesNoInternalTypes: an exported declaration of a
// package outside internal/ (a function or method signature, a type, an
// exported field or interface method, a variable's declared type) names no
// type of an internal package, which a caller outside the module could not
// name. A type alias (type X = internalpkg.Y) is the way to re-export one,
// so its right-hand side is allowed. Commands (package main) export
// nothing and are skipped.
func TestLint_ExportedAPIUsesNoInternalTypes(t *testing.T) {
	fset := token.NewFileSet()
	for _, gf := range parseAll(t) {
		if gf.test || gf.pkg == "internal" || strings.HasPrefix(gf.pkg, "internal/") || gf.f.Name.Name == "main" {
			continue
		}
		f, err := parser.ParseFile(fset, gf.path, nil, 0)
		require.NoError(t, err)
		for _, where := range internalTypeUses(f) {
			t.Errorf("%s: exported %s uses internal type %s", fset.Position(where.pos), where.decl, where.typ)
		}
	}
}

type internalUse struct {
	pos       token.Pos
	decl, typ string
}

// internalTypeUses lists the internal types f's exported declarations use.
func internalTypeUses(f *ast.File) []internalUse {
	internal := map[string]string{} // local import name -> import path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(p, module+"/")
		if !ok || !(rel == "internal" || strings.HasPrefix(rel, "internal/")) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		internal[name] = p
	}
	if len(internal) == 0 {
		return nil
	}
	var out []internalUse
	// check reports the internal types named in expr, skipping unexported
	// struct fields and interface methods.
	var check func(decl string, expr ast.Node)
	check = func(decl string, expr ast.Node) {
		if expr == nil {
			return
		}
		// members checks the exported (or embedded) fields of a struct, or
		// methods of an interface.
		members := func(l *ast.FieldList) {
			for _, fld := range l.List {
				exported := len(fld.Names) == 0
				for _, id := range fld.Names {
					exported = exported || id.IsExported()
				}
				if exported {
					check(decl, fld.Type)
				}
			}
		}
		ast.Inspect(expr, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.StructType:
				members(n.Fields)
				return false
			case *ast.InterfaceType:
				members(n.Methods)
				return false
			case *ast.FuncLit, *ast.BlockStmt:
				return false
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok {
					if p, ok := internal[id.Name]; ok {
						out = append(out, internalUse{n.Pos(), decl, p + "." + n.Sel.Name})
					}
				}
				return false
			}
			return true
		})
	}
	// exportedRecv reports whether a method's receiver type is exported.
	exportedRecv := func(fd *ast.FuncDecl) bool {
		e := fd.Recv.List[0].Type
		for {
			switch x := e.(type) {
			case *ast.StarExpr:
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.IndexListExpr:
				e = x.X
			case *ast.Ident:
				return x.IsExported()
			default:
				return false
			}
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d)) {
				continue
			}
			check(d.Name.Name, d.Type)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && !s.Assign.IsValid() {
						if s.TypeParams != nil {
							check(s.Name.Name, s.TypeParams)
						}
						check(s.Name.Name, s.Type)
					}
				case *ast.ValueSpec:
					for _, id := range s.Names {
						if id.IsExported() {
							check(id.Name, s.Type)
							break
						}
					}
				}
			}
		}
	}
	return out
}

// TestLint_InternalTypeUsesFinds checks the checker on a made-up file.
func TestLint_InternalTypeUsesFinds(t *testing.T) {
	src := `package p
import (
	"github.com/stratadb/strata/internal/base"
	ib "github.com/stratadb/strata/internal/cache"
)
type Key = base.InternalKey // an alias re-exports: allowed
type T struct {
	Exported base.SeqNum
	hidden   base.Kind
	*ib.Cache
}
type I interface {
	Get() base.Tombstone
	put(base.Kind)
}
func F(k []byte, s base.SeqNum) error { var x base.Kind; _ = x; return nil }
func g(s base.SeqNum) {}
func (T) M() (k base.InternalKey) { return }
func (t) N() base.InternalKey { return base.InternalKey{} }
type t struct{}
var V, w base.SeqNum
var u base.SeqNum
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	require.NoError(t, err)
	var got []string
	for _, u := range internalTypeUses(f) {
		got = append(got, u.decl+" "+u.typ)
	}
	require.Equal(t, []string{
		"T github.com/stratadb/strata/internal/base.SeqNum",
		"T github.com/stratadb/strata/internal/cache.Cache",
		"I github.com/stratadb/strata/internal/base.Tombstone",
		"F github.com/stratadb/strata/internal/base.SeqNum",
		"M github.com/stratadb/strata/internal/base.InternalKey",
		"V github.com/stratadb/strata/internal/base.SeqNum",
	}, got)
}
