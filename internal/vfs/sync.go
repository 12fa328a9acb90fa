package vfs

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
