package vfs

import (
	"os"
	"path/filepath"

	"github.com/cockroachdb/errors"
)

// SyncDir makes the entries of dir (creations, renames, removals) durable.
func SyncDir(fs FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// WriteFileSynced creates path with data and syncs it. The new entry is
// durable in its directory only once the directory is synced.
func WriteFileSynced(fs FS, path string, data []byte) error {
	f, err := fs.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// MkdirAllSynced creates dir and whichever of its ancestors are missing, and
// syncs the parent of each directory it created. Syncing only dir's parent
// is not enough: if that parent is new too, a power loss can drop it, and
// with it dir and everything acknowledged inside. A dir that already exists
// costs one Stat and no sync.
func MkdirAllSynced(fs FS, dir string) error {
	dir = filepath.Clean(dir)
	var missing []string // deepest first
	for d := dir; ; {
		_, err := fs.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		if parent := filepath.Dir(d); parent != d {
			if err := SyncDir(fs, parent); err != nil {
				return errors.Wrapf(err, "syncing %s", parent)
			}
		}
	}
	return nil
}
