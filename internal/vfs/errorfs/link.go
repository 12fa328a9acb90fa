package errorfs

import "github.com/stratadb/strata/internal/vfs"

var _ vfs.Linker = (*errorFS)(nil)

// Link implements vfs.Linker when the wrapped FS does (otherwise it returns
// vfs.ErrLinkUnsupported, and callers copy). The injector sees it as an
// OpCreate of newname: a link creates a directory entry.
func (e *errorFS) Link(oldname, newname string) error {
	if err := e.inj.MaybeError(OpCreate, newname); err != nil {
		return err
	}
	return vfs.Link(e.fs, oldname, newname)
}
