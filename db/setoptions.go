package db

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/prefix"
)

// mutableOption is one option SetOptions can change: parse checks the value
// and returns a function that sets it in a copy of the mutable state. The
// whole call is applied to the copy, the resulting option set is validated
// as Open validates options, and only then installed: an error changes
// nothing.
type mutableOption struct {
	name  string
	parse func(d *DB, value string) (apply func(*mutableOptionsState), err error)
}

var mutableOptions = []mutableOption{
	{"prefix_extractor", parsePrefixExtractor},
	{"write_buffer_size", func(d *DB, v string) (func(*mutableOptionsState), error) {
		n, err := parseIntIn(v, minWriteBufferSize, maxWriteBufferSize)
		if err != nil {
			return nil, err
		}
		return func(s *mutableOptionsState) { s.writeBufferSize = n }, nil
	}},
	{"disable_auto_compactions", func(d *DB, v string) (func(*mutableOptionsState), error) {
		b, err := parseBool(v)
		if err != nil {
			return nil, err
		}
		return func(s *mutableOptionsState) { s.disableAuto = b }, nil
	}},
	compactionIntOption("level0_file_num_compaction_trigger", intL0Trigger),
	compactionIntOption("level0_slowdown_writes_trigger", intL0Slowdown),
	compactionIntOption("level0_stop_writes_trigger", intL0Stop),
	compactionIntOptionMax("target_file_size_base", maxTargetFileSize, intTargetFileSize),
	compactionIntOption("max_bytes_for_level_base", intMaxBytesBase),
	compactionIntOption("max_background_jobs", intMaxBackgroundJobs),
	compactionIntOptionMax("max_subcompactions", maxMaxSubcompactions, intMaxSubcompactions),
	{"max_bytes_for_level_multiplier", parseLevelMultiplier},
	blobOption("enable_blob_files", func(b *blobSettings, v string) (err error) { b.enable, err = parseBool(v); return }),
	blobOption("min_blob_size", func(b *blobSettings, v string) (err error) {
		b.minSize, err = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		return
	}),
	blobOption("blob_file_size", func(b *blobSettings, v string) error {
		n, err := parseIntIn(v, 1, math.MaxInt64)
		b.fileSize = uint64(n)
		return err
	}),
	blobOption("blob_compression_type", func(b *blobSettings, v string) (err error) {
		b.compression, err = parseRocksDBCompression(v)
		return
	}),
	blobOption("enable_blob_garbage_collection", func(b *blobSettings, v string) (err error) { b.gc, err = parseBool(v); return }),
	blobOption("blob_garbage_collection_age_cutoff", func(b *blobSettings, v string) (err error) {
		b.ageCutoff, err = parseUnitFraction(v)
		return
	}),
	blobOption("blob_garbage_collection_force_threshold", func(b *blobSettings, v string) (err error) {
		b.forceThreshold, err = parseUnitFraction(v)
		return
	}),
}

// blobOption is a blob file option: set changes a copy of the settings.
func blobOption(name string, set func(*blobSettings, string) error) mutableOption {
	return mutableOption{name, func(d *DB, v string) (func(*mutableOptionsState), error) {
		var probe blobSettings
		if err := set(&probe, v); err != nil {
			return nil, err
		}
		return func(s *mutableOptionsState) {
			c := *s.blob
			_ = set(&c, v)
			s.blob = &c
		}, nil
	}}
}

// parseUnitFraction parses a number in (0, 1].
func parseUnitFraction(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, errors.Newf("want a number in (0, 1]")
	}
	return f, nil
}

// SetOptions changes mutable options at run time, atomically: on any error
// nothing changes. Names are RocksDB's: "prefix_extractor" (a prefix.Parse
// string, or "" / "nullptr" for none), "write_buffer_size" (decimal bytes),
// "disable_auto_compactions" ("true"/"false"), and the compaction options
// "level0_file_num_compaction_trigger", "level0_slowdown_writes_trigger",
// "level0_stop_writes_trigger", "target_file_size_base",
// "max_bytes_for_level_base", "max_background_jobs", "max_subcompactions"
// (positive decimal integers; max_subcompactions at most 1024) and
// "max_bytes_for_level_multiplier" (a number above 1), and the blob file
// options "enable_blob_files" and "enable_blob_garbage_collection"
// ("true"/"false"), "min_blob_size" and "blob_file_size" (decimal bytes),
// "blob_compression_type" (RocksDB's names: "kNoCompression",
// "kSnappyCompression", "kZSTD"), "blob_garbage_collection_age_cutoff" and
// "blob_garbage_collection_force_threshold" (numbers in (0, 1]); they take
// effect at the next flush or compaction.
// Unknown names and bad values wrap ErrInvalidArgument and name the option
// and value.
func (d *DB) SetOptions(opts map[string]string) error { return d.def.setOptions(opts, true) }

// SetOptions changes the family's mutable options at run time, as
// DB.SetOptions does for the default family; the DB-wide ones
// (max_background_jobs, max_subcompactions) go through DB.SetOptions only.
func (cf *ColumnFamily) SetOptions(opts map[string]string) error {
	return cf.setOptions(opts, cf.id == 0)
}

// setOptions applies opts to cf; dbWide allows the options that are the
// database's rather than a family's.
func (cf *ColumnFamily) setOptions(opts map[string]string, dbWide bool) error {
	d := cf.d
	if err := cf.check(d); err != nil {
		return err
	}
	applies := make([]func(*mutableOptionsState), 0, len(opts))
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
		if (name == "max_background_jobs" || name == "max_subcompactions") && !dbWide {
			return errors.Wrapf(ErrInvalidArgument, "strata: SetOptions: %q is a database option: set it with DB.SetOptions (value %q)", name, value)
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
	saved := cf.saveMutableOptions()
	next := saved
	for _, apply := range applies {
		apply(&next)
	}
	// The resulting option set must be one Open accepts: triggers that
	// Open refuses (an L0 compaction trigger above the stop trigger, say)
	// would stall writes for good.
	o := cf.optionsWith(next)
	if err := o.validate(); err != nil {
		return errors.Wrapf(err, "strata: SetOptions: %s would make an option set Open refuses; no option was changed", describeOptions(opts))
	}
	cf.restoreMutableOptions(next)
	// Keep the OPTIONS file in step, as RocksDB does, so its tools see the
	// options in force. If it cannot be written, undo: on any error
	// nothing changes (the previous OPTIONS file still describes the
	// options in force).
	if !d.opts.ReadOnly {
		if err := d.writeOptionsFile(); err != nil {
			cf.restoreMutableOptions(saved)
			return errors.Wrap(err, "strata: SetOptions: writing the OPTIONS file failed; no option was changed")
		}
	}
	return nil
}

// describeOptions lists a SetOptions call's options, sorted, as
// "name"="value" pairs, for errors.
func describeOptions(opts map[string]string) string {
	names := make([]string, 0, len(opts))
	for n := range opts {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q=%q", n, opts[n])
	}
	return b.String()
}

// The indexes of the compaction integers in mutableOptionsState.ints, in
// the order of compactionInts.
const (
	intL0Trigger = iota
	intL0Slowdown
	intL0Stop
	intTargetFileSize
	intMaxBytesBase
	intMaxBackgroundJobs
	intMaxSubcompactions
)

// mutableOptionsState is the state SetOptions may change.
type mutableOptionsState struct {
	writeBufferSize int64
	disableAuto     bool
	extractor       *extractorHandle
	ints            [7]int64
	multiplierBits  uint64
	blob            *blobSettings
}

func (cf *ColumnFamily) compactionInts() [7]*atomic.Int64 {
	c := &cf.comp
	return [7]*atomic.Int64{&c.l0Trigger, &c.l0Slowdown, &c.l0Stop, &c.targetFileSize, &c.maxBytesBase,
		&cf.d.maxBackgroundJobs, &cf.d.maxSubcompactions}
}

// saveMutableOptions returns the state SetOptions may change.
// d.setOptionsMu must be held.
func (cf *ColumnFamily) saveMutableOptions() mutableOptionsState {
	s := mutableOptionsState{
		writeBufferSize: cf.writeBufferSize.Load(),
		disableAuto:     cf.comp.disableAuto.Load(),
		extractor:       cf.extractor.Load(),
		multiplierBits:  cf.comp.multiplierBits.Load(),
		blob:            cf.blob.Load(),
	}
	for i, p := range cf.compactionInts() {
		s.ints[i] = p.Load()
	}
	return s
}

// optionsWith returns the DB's options with the mutable ones as in s, for
// validation (the level multiplier, a float here and an int in Options, is
// checked when it is parsed).
func (cf *ColumnFamily) optionsWith(s mutableOptionsState) Options {
	o := cf.opts
	o.WriteBufferSize = int(s.writeBufferSize)
	o.DisableAutoCompactions = s.disableAuto
	// A compaction integer of 0 was never set: the Options value holds
	// (see DB.optInt).
	set := func(dst *int, i int) {
		if v := s.ints[i]; v != 0 {
			*dst = int(v)
		}
	}
	set(&o.Level0FileNumCompactionTrigger, intL0Trigger)
	set(&o.Level0SlowdownWritesTrigger, intL0Slowdown)
	set(&o.Level0StopWritesTrigger, intL0Stop)
	set(&o.MaxBackgroundJobs, intMaxBackgroundJobs)
	set(&o.MaxSubcompactions, intMaxSubcompactions)
	if v := s.ints[intTargetFileSize]; v != 0 {
		o.TargetFileSizeBase = v
	}
	if v := s.ints[intMaxBytesBase]; v != 0 {
		o.MaxBytesForLevelBase = v
	}
	s.blob.setOptions(&o)
	return o
}

// restoreMutableOptions installs s (what saveMutableOptions returned, or a
// validated change of it). d.setOptionsMu must be held.
func (cf *ColumnFamily) restoreMutableOptions(s mutableOptionsState) {
	cf.writeBufferSize.Store(s.writeBufferSize)
	cf.comp.disableAuto.Store(s.disableAuto)
	cf.extractor.Store(s.extractor)
	cf.comp.multiplierBits.Store(s.multiplierBits)
	cf.blob.Store(s.blob)
	for i, p := range cf.compactionInts() {
		p.Store(s.ints[i])
	}
	cf.d.rescheduleAfterOptions()
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
func parsePrefixExtractor(d *DB, v string) (func(*mutableOptionsState), error) {
	if v == "" || v == "nullptr" {
		return func(s *mutableOptionsState) { s.extractor = nil }, nil
	}
	e, err := prefix.Parse(v)
	if err != nil {
		return nil, err
	}
	return func(s *mutableOptionsState) {
		if cur := s.extractor; cur != nil && cur.name == e.Name() {
			return
		}
		s.extractor = newExtractorHandle(e)
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
func compactionIntOption(name string, index int) mutableOption {
	return compactionIntOptionMax(name, math.MaxInt64, index)
}

// compactionIntOptionMax is compactionIntOption with an upper bound.
func compactionIntOptionMax(name string, hi int64, index int) mutableOption {
	return mutableOption{name, func(d *DB, v string) (func(*mutableOptionsState), error) {
		n, err := parseIntIn(v, 1, hi)
		if err != nil {
			return nil, err
		}
		return func(s *mutableOptionsState) { s.ints[index] = n }, nil
	}}
}

func parseLevelMultiplier(d *DB, v string) (func(*mutableOptionsState), error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || !(f > 1) || f > maxLevelMultiplier {
		return nil, errors.Newf("want a number in (1, %d]", maxLevelMultiplier)
	}
	return func(s *mutableOptionsState) { s.multiplierBits = math.Float64bits(f) }, nil
}
