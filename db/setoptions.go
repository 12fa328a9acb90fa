package db

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/prefix"
)

// mutableOption is one option SetOptions can change: parse checks the value
// and returns a function that applies it. All values are parsed before any
// is applied, so an error changes nothing.
type mutableOption struct {
	name  string
	parse func(d *DB, value string) (apply func(), err error)
}

var mutableOptions = []mutableOption{
	{"prefix_extractor", parsePrefixExtractor},
	{"write_buffer_size", func(d *DB, v string) (func(), error) {
		n, err := parseIntIn(v, 1, maxWriteBufferSize)
		if err != nil {
			return nil, err
		}
		return func() { d.writeBufferSize.Store(n) }, nil
	}},
	{"disable_auto_compactions", func(d *DB, v string) (func(), error) {
		b, err := parseBool(v)
		if err != nil {
			return nil, err
		}
		return func() { d.comp.disableAuto.Store(b) }, nil
	}},
	compactionIntOption("level0_file_num_compaction_trigger", func(d *DB) *atomic.Int64 { return &d.comp.l0Trigger }),
	compactionIntOption("level0_slowdown_writes_trigger", func(d *DB) *atomic.Int64 { return &d.comp.l0Slowdown }),
	compactionIntOption("level0_stop_writes_trigger", func(d *DB) *atomic.Int64 { return &d.comp.l0Stop }),
	compactionIntOptionMax("target_file_size_base", maxTargetFileSize, func(d *DB) *atomic.Int64 { return &d.comp.targetFileSize }),
	compactionIntOption("max_bytes_for_level_base", func(d *DB) *atomic.Int64 { return &d.comp.maxBytesBase }),
	compactionIntOption("max_background_jobs", func(d *DB) *atomic.Int64 { return &d.comp.maxBackgroundJobs }),
	{"max_bytes_for_level_multiplier", parseLevelMultiplier},
}

// SetOptions changes mutable options at run time, atomically: on any error
// nothing changes. Names are RocksDB's: "prefix_extractor" (a prefix.Parse
// string, or "" / "nullptr" for none), "write_buffer_size" (decimal bytes),
// "disable_auto_compactions" ("true"/"false"), and the compaction options
// "level0_file_num_compaction_trigger", "level0_slowdown_writes_trigger",
// "level0_stop_writes_trigger", "target_file_size_base",
// "max_bytes_for_level_base", "max_background_jobs" (positive decimal
// integers) and "max_bytes_for_level_multiplier" (a number above 1).
// Unknown names and bad values wrap ErrInvalidArgument and name the option
// and value.
func (d *DB) SetOptions(opts map[string]string) error {
	if err := d.checkOpen(); err != nil {
		return err
	}
	applies := make([]func(), 0, len(opts))
	for name, value := range opts {
		var opt *mutableOption
		for i := range mutableOptions {
			if mutableOptions[i].name == name {
				opt = &mutableOptions[i]
			}
		}
		if opt == nil {
			return errors.Wrapf(ErrInvalidArgument, "strata: SetOptions: unknown or immutable option %q (value %q)", name, value)
		}
		apply, err := opt.parse(d, value)
		if err != nil {
			return errors.Wrapf(base.Mark(err, ErrInvalidArgument), "strata: SetOptions: option %q value %q", name, value)
		}
		applies = append(applies, apply)
	}
	if err := d.beginOp("SetOptions"); err != nil {
		return err
	}
	defer d.endOp()
	d.setOptionsMu.Lock()
	defer d.setOptionsMu.Unlock()
	saved := d.saveMutableOptions()
	for _, apply := range applies {
		apply()
	}
	d.rescheduleAfterOptions()
	// Keep the OPTIONS file in step, as RocksDB does, so its tools see the
	// options in force. If it cannot be written, undo: on any error
	// nothing changes (the previous OPTIONS file still describes the
	// options in force).
	if !d.opts.ReadOnly {
		if err := d.writeOptionsFile(); err != nil {
			d.restoreMutableOptions(saved)
			return errors.Wrap(err, "strata: SetOptions: writing the OPTIONS file failed; no option was changed")
		}
	}
	return nil
}

// mutableOptionsState is the state SetOptions may change.
type mutableOptionsState struct {
	writeBufferSize int64
	disableAuto     bool
	extractor       *extractorHandle
	ints            [6]int64
	multiplierBits  uint64
}

func (d *DB) compactionInts() [6]*atomic.Int64 {
	c := &d.comp
	return [6]*atomic.Int64{&c.l0Trigger, &c.l0Slowdown, &c.l0Stop, &c.targetFileSize, &c.maxBytesBase, &c.maxBackgroundJobs}
}

// saveMutableOptions returns the state SetOptions may change.
// d.setOptionsMu must be held.
func (d *DB) saveMutableOptions() mutableOptionsState {
	s := mutableOptionsState{
		writeBufferSize: d.writeBufferSize.Load(),
		disableAuto:     d.comp.disableAuto.Load(),
		extractor:       d.extractor.Load(),
		multiplierBits:  d.comp.multiplierBits.Load(),
	}
	for i, p := range d.compactionInts() {
		s.ints[i] = p.Load()
	}
	return s
}

// restoreMutableOptions puts back what saveMutableOptions returned.
// d.setOptionsMu must be held.
func (d *DB) restoreMutableOptions(s mutableOptionsState) {
	d.writeBufferSize.Store(s.writeBufferSize)
	d.comp.disableAuto.Store(s.disableAuto)
	d.extractor.Store(s.extractor)
	d.comp.multiplierBits.Store(s.multiplierBits)
	for i, p := range d.compactionInts() {
		p.Store(s.ints[i])
	}
	d.rescheduleAfterOptions()
}

// rescheduleAfterOptions looks for a compaction made due, and wakes stalled
// writers to re-check the stall rules, once a whole SetOptions call (or its
// undoing) is applied: the applies themselves only store, so the picker never
// sees half of a call's options (a trigger lowered in the same call as
// automatic compactions are enabled, say).
func (d *DB) rescheduleAfterOptions() {
	d.mu.Lock()
	d.refreshRoomFreeLocked() // the stall triggers may have changed
	d.maybeScheduleCompactionLocked()
	d.mu.cond.Broadcast()
	d.mu.Unlock()
}

// parsePrefixExtractor keeps the current handle when the Name in force is
// set again, so open tables keep their fast path (RocksDB makes a new
// instance here and sends every table to the slow path).
func parsePrefixExtractor(d *DB, v string) (func(), error) {
	if v == "" || v == "nullptr" {
		return func() { d.extractor.Store(nil) }, nil
	}
	e, err := prefix.Parse(v)
	if err != nil {
		return nil, err
	}
	return func() {
		if cur := d.extractor.Load(); cur != nil && cur.name == e.Name() {
			return
		}
		d.extractor.Store(newExtractorHandle(e))
	}, nil
}

func parsePositiveInt(v string) (int64, error) { return parseIntIn(v, 1, math.MaxInt64) }

// parseIntIn parses a decimal integer in [lo, hi].
func parseIntIn(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < lo || n > hi {
		if hi == math.MaxInt64 {
			return 0, errors.Newf("want a decimal integer of at least %d", lo)
		}
		return 0, errors.Newf("want a decimal integer in [%d, %d]", lo, hi)
	}
	return n, nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.Newf("want true or false")
}

// compactionIntOption is a positive integer option read by the compaction
// picker and the stall rules; setting it may make a compaction due.
func compactionIntOption(name string, field func(d *DB) *atomic.Int64) mutableOption {
	return compactionIntOptionMax(name, math.MaxInt64, field)
}

// compactionIntOptionMax is compactionIntOption with an upper bound.
func compactionIntOptionMax(name string, hi int64, field func(d *DB) *atomic.Int64) mutableOption {
	return mutableOption{name, func(d *DB, v string) (func(), error) {
		n, err := parseIntIn(v, 1, hi)
		if err != nil {
			return nil, err
		}
		return func() { field(d).Store(n) }, nil
	}}
}

func parseLevelMultiplier(d *DB, v string) (func(), error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 1) || f > maxLevelMultiplier {
		return nil, errors.Newf("want a number in (1, %d]", maxLevelMultiplier)
	}
	return func() { d.comp.multiplierBits.Store(math.Float64bits(f)) }, nil
}
