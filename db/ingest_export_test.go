package db

// SetIngestHooks installs test hooks of Ingest: afterLink runs after each
// file is linked into the database directory, beforeManifest just before
// the MANIFEST edit. nil removes a hook.
func SetIngestHooks(afterLink func(fileNum uint64), beforeManifest func()) {
	testingIngestAfterLink = afterLink
	testingIngestBeforeManifest = beforeManifest
}
