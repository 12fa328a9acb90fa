package db

// Test-only access to compaction internals, for the db_test package.

// WaitForCompactions waits until no flush or compaction runs and none is
// due (or a background error is set), and returns the background error.
func WaitForCompactions(d *DB) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if d.mu.bgErr != nil {
			return d.mu.bgErr
		}
		d.maybeScheduleFlushLocked()
		d.maybeScheduleCompactionLocked()
		if !d.mu.flushing && len(d.def.mu.imm) == 0 && len(d.def.comp.inflight) == 0 {
			return nil
		}
		d.mu.cond.Wait()
	}
}

// CompactionFault is a bug SetCompactionFault plants in compaction.
type CompactionFault = compactionFault

// The bugs a test can plant (see compactionFault).
const (
	CompactionFaultNone                   = faultNone
	CompactionFaultDropDeletesAboveBottom = faultDropDeletesAboveBottom
	CompactionFaultMergeAcrossStripes     = faultMergeAcrossStripes
)

// SetCompactionFault plants f in every compaction of d that starts from now
// on (CompactionFaultNone removes it).
func SetCompactionFault(d *DB, f CompactionFault) { d.testingCompactionFault.Store(uint32(f)) }
