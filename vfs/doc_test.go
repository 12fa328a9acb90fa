package vfs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/vfs"
	"github.com/stretchr/testify/require"
)

// TestUserStore is the snippet of docs/getting-started.md's "Testing your
// application", verbatim (TestGettingStartedSnippet checks it), so that the
// page's code compiles and passes.
func TestUserStore(t *testing.T) {
	fs := vfs.NewMem() // no directory to create or clean up
	d, err := db.Open("users", &db.Options{CreateIfMissing: true, FS: fs})
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("user:1"), []byte("ada"), &db.WriteOptions{Sync: true}))
	require.NoError(t, d.Put([]byte("user:2"), []byte("grace"), nil))

	// A power loss now keeps what was synced: user:1, and user:2 only if
	// something synced the WAL after it.
	crashed, err := db.Open("users", &db.Options{FS: fs.CrashClone()})
	require.NoError(t, err)
	v, err := crashed.Get([]byte("user:1"), nil)
	require.NoError(t, err)
	require.Equal(t, "ada", string(v))
	require.NoError(t, crashed.Close())

	// Close and reopen on the same fs: every acknowledged write is there.
	require.NoError(t, d.Close())
	d, err = db.Open("users", &db.Options{FS: fs})
	require.NoError(t, err)
	defer d.Close()
	v, err = d.Get([]byte("user:2"), nil)
	require.NoError(t, err)
	require.Equal(t, "grace", string(v))
}

// TestGettingStartedSnippet: the first Go block of the getting-started
// page's "Testing your application" section is TestUserStore's source.
func TestGettingStartedSnippet(t *testing.T) {
	page, err := os.ReadFile("../docs/getting-started.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(page), "\n## Testing your application\n")
	require.True(t, ok, "docs/getting-started.md has no Testing your application section")
	_, block, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no Go block")
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)

	src, err := os.ReadFile("doc_test.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc_test.go", src, 0)
	require.NoError(t, err)
	var fn string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == "TestUserStore" {
			fn = string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset])
		}
	}
	require.NotEmpty(t, fn)
	require.Equal(t, fn+"\n", block, "docs/getting-started.md's snippet and TestUserStore differ: copy one onto the other")
}
