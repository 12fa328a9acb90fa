package version

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/vfs"
)

// heldFS refuses to remove the files in held, as Windows refuses to remove
// a file some other handle (a backup tool, a scanner) keeps open.
type heldFS struct {
	vfs.FS
	mu   sync.Mutex
	held map[string]bool
}

func (h *heldFS) Remove(name string) error {
	h.mu.Lock()
	held := h.held[filepath.Base(name)]
	h.mu.Unlock()
	if held {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrPermission}
	}
	return h.FS.Remove(name)
}

func (h *heldFS) manifests(t *testing.T) []string {
	names, err := h.List(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if k, _, ok := base.ParseFilename(n); ok && k == base.FileKindManifest {
			out = append(out, n)
		}
	}
	return out
}

// A replaced MANIFEST whose removal fails is retried at the next switch,
// not forgotten until the next Open.
func TestOldManifestRemovalRetried(t *testing.T) {
	fs := &heldFS{FS: newMemFS(t), held: map[string]bool{}}
	vs, err := Create(fs, dir, Options{MaxManifestFileSize: 1})
	require.NoError(t, err)
	defer vs.Close()
	first := base.MakeFilename(base.FileKindManifest, vs.ManifestFileNum())
	fs.held[first] = true
	require.NoError(t, vs.LogAndApply(&Edit{}))
	require.Contains(t, fs.manifests(t), first, "held: not removed")
	require.NoError(t, vs.LogAndApply(&Edit{}))
	require.Contains(t, fs.manifests(t), first, "still held")
	fs.mu.Lock()
	delete(fs.held, first)
	fs.mu.Unlock()
	require.NoError(t, vs.LogAndApply(&Edit{}))
	require.Equal(t, []string{base.MakeFilename(base.FileKindManifest, vs.ManifestFileNum())}, fs.manifests(t))
}
