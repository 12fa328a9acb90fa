package db

// SetIngestHooks installs test hooks of d's Ingest: afterLink runs after
// each file is linked into the database directory, beforeManifest just
// before the MANIFEST edit. nil removes a hook. Set them before d is used
// concurrently.
func SetIngestHooks(d *DB, afterLink func(fileNum uint64), beforeManifest func()) {
	d.testing.ingestAfterLink = afterLink
	d.testing.ingestBeforeManifest = beforeManifest
}
