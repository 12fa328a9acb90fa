package db

import (
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sort"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
)

// dirListing is the database directory, listed once at Open and parsed
// once into (kind, number) per file.
type dirListing struct {
	hasCurrent  bool
	hasIdentity bool
	logs        []uint64 // ascending
	tables      []uint64 // ascending
	blobs       []uint64
	manifests   []uint64
	options     []uint64
	temps       []string
	maxNum      uint64
}

func (d *DB) listDir() (dirListing, error) {
	var l dirListing
	names, err := d.fs.List(d.dirname)
	if err != nil {
		return l, errors.Wrapf(err, "strata: listing %s", d.dirname)
	}
	for _, name := range names {
		kind, num, ok := base.ParseFilename(name)
		if !ok {
			continue
		}
		if num > l.maxNum {
			l.maxNum = num
		}
		switch kind {
		case base.FileKindCurrent:
			l.hasCurrent = true
		case base.FileKindIdentity:
			l.hasIdentity = true
		case base.FileKindLog:
			l.logs = append(l.logs, num)
		case base.FileKindTable:
			l.tables = append(l.tables, num)
		case base.FileKindBlob:
			l.blobs = append(l.blobs, num)
		case base.FileKindManifest:
			l.manifests = append(l.manifests, num)
		case base.FileKindOptions:
			l.options = append(l.options, num)
		case base.FileKindTemp:
			l.temps = append(l.temps, name)
		}
	}
	sortNums(l.logs)
	sortNums(l.tables)
	sortNums(l.options)
	return l, nil
}

func sortNums(s []uint64) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }

// Open opens the database in dirname. nil opts means all defaults.
func Open(dirname string, opts *Options) (*DB, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	d := &DB{dirname: dirname, opts: o, fs: o.FS}
	if o.Clock != nil {
		clock := o.Clock
		d.clock.Store(&clock)
	}
	d.mu.cond.L = &d.mu.Mutex
	d.mu.pendingOutputs = make(map[uint64]struct{})
	if c, ok := o.ColumnFamilies[DefaultColumnFamilyName]; ok {
		// The default family's options given by name win over the
		// per-family fields of Options.
		fo, err := o.withFamily(c)
		if err != nil {
			return nil, errors.Wrap(err, "strata: column family \"default\"")
		}
		o = fo
		d.opts = o
	}
	d.cache = cache.NewWithHighPriPool(o.BlockCacheSize, o.HighPriPoolRatio)
	d.tables = newTableCache(d, o.MaxOpenFiles)
	d.blobs = newBlobFiles(d)
	d.startEvents()
	if err := d.open(); err != nil {
		d.logf(slog.LevelError, "open failed", "err", err)
		d.abandon()
		return nil, err
	}
	if err := d.startInfoLogFile(); err != nil {
		d.Close()
		return nil, err
	}
	d.logOptions()
	return d, nil
}

// abandon releases what a failed Open acquired.
func (d *DB) abandon() {
	d.mu.Lock()
	if d.mu.log.file != nil {
		d.mu.log.file.Close()
	}
	if d.mu.versions != nil {
		d.mu.versions.Close()
	}
	d.mu.closing = true
	d.mu.Unlock()
	d.mu.bgWG.Wait()
	d.mu.Lock()
	_ = d.dropNextWALLocked()
	d.mu.Unlock()
	d.tables.close()
	d.blobs.close()
	if d.lock != nil {
		d.lock.Close()
	}
	d.stopEvents()
	d.closeInfoLog()
}

func (d *DB) open() error {
	o := &d.opts
	if o.ReadOnly || !o.CreateIfMissing {
		// Without a directory there is no database to open: say so as
		// RocksDB does, not with whichever file operation fails first.
		if _, err := d.fs.Stat(d.dirname); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				why := "create_if_missing is false"
				if o.ReadOnly {
					why = "opened read-only"
				}
				return errors.Wrapf(ErrInvalidArgument, "strata: %s does not exist (%s)", d.dirname, why)
			}
			return errors.Wrapf(err, "strata: stat %s", d.dirname)
		}
	}
	if !o.ReadOnly {
		if o.CreateIfMissing {
			// The directory and any parents Open creates are durable in
			// their parents before the first write is acknowledged.
			if err := vfs.MkdirAllSynced(d.fs, d.dirname); err != nil {
				return errors.Wrapf(err, "strata: creating %s", d.dirname)
			}
		}
	}
	// A read-only handle takes the lock too. Beside a live writer it would
	// read a version whose tables the writer's compactions delete, and fail
	// with "no such file" (keeping every table of its version open instead
	// would cost a descriptor per table and still go wrong once the table
	// cache evicts one). So one handle opens a directory at a time, as the
	// contract says; a reader beside a live writer uses a Checkpoint. A
	// read-only Open creates no files: without a LOCK file (no writer ever
	// opened the directory) there is nothing to take.
	lockName := d.path(base.MakeFilename(base.FileKindLock, 0))
	if _, err := d.fs.Stat(lockName); !o.ReadOnly || err == nil {
		lock, err := d.fs.Lock(lockName)
		if err != nil {
			return errors.Wrapf(err, "strata: locking %s (is another process or DB handle using it?)", d.dirname)
		}
		d.lock = lock
	}
	if err := d.openInfoLog(); err != nil {
		return err
	}
	listing, err := d.listDir()
	if err != nil {
		return err
	}
	if err := d.checkOptionsFiles(listing.options); err != nil {
		return err
	}
	vopts := version.Options{Comparer: d.familyComparer}
	var vs *version.VersionSet
	switch {
	case !listing.hasCurrent:
		if o.ReadOnly || !o.CreateIfMissing {
			return errors.Wrapf(ErrInvalidArgument, "strata: %s holds no database (CURRENT missing) and CreateIfMissing is not set", d.dirname)
		}
		if err := d.writeIdentity(); err != nil {
			return err
		}
		listing.hasIdentity = true
		vs, err = version.Create(d.fs, d.dirname, vopts)
	case o.ErrorIfExists:
		return errors.Wrapf(ErrInvalidArgument, "strata: database %s already exists and ErrorIfExists is set", d.dirname)
	default:
		vs, err = loadVersions(d, vopts)
		if err == nil {
			manifest := base.MakeFilename(base.FileKindManifest, vs.ManifestFileNum())
			for _, f := range vs.Families() {
				if err == nil {
					err = d.checkTables(f.Current(), listing.tables, manifest)
				}
			}
			if err == nil {
				err = d.checkLogNumber(vs, listing.logs, listing.tables, manifest)
			}
			if err != nil {
				vs.Close()
			}
		}
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.versions = vs
	// MANIFEST appends and their fsyncs run with d.mu released.
	vs.SetMutex(&d.mu.Mutex)
	if listing.maxNum > 0 {
		vs.MarkFileNumUsed(listing.maxNum)
	}
	if err := d.readIdentity(listing.hasIdentity); err != nil {
		return err
	}
	d.visibleSeq.Store(uint64(vs.LastSeq()))
	if err := d.openFamiliesLocked(); err != nil {
		return err
	}
	if err := d.recoverWALsLocked(listing.logs); err != nil {
		return err
	}
	d.commit.lastSeq = base.SeqNum(d.visibleSeq.Load())
	// No writer has met another yet: the first writes insert alone.
	d.commit.contendedSeq = d.commit.lastSeq - aloneAfter
	for _, cf := range d.mu.fams {
		d.updateReadStateLocked(cf)
	}
	if err := d.createMissingFamiliesLocked(); err != nil {
		return err
	}
	d.reportOptionsFileLocked()
	if !o.ReadOnly {
		d.sweepLocked(listing)
		d.mu.optionsFiles = append(d.mu.optionsFiles[:0], listing.options...)
		if err := d.writeOptionsFileLocked(); err != nil {
			return err
		}
	}
	d.maybeScheduleCompactionLocked()
	return nil
}

// openFamiliesLocked makes the handles of the families the MANIFEST lists,
// with their options: those Options.ColumnFamilies gives, else (for the
// default family) Options' own, else those the OPTIONS file records. d.mu
// must be held.
func (d *DB) openFamiliesLocked() error {
	for _, vf := range d.mu.versions.Families() {
		var o Options
		var err error
		if c, ok := d.opts.ColumnFamilies[vf.Name()]; ok {
			o, err = d.opts.withFamily(c)
		} else if vf.ID() == 0 {
			o = d.opts
		} else {
			o, err = d.familyOptionsFromFile(vf.Name(), d.opts)
		}
		if err != nil {
			return errors.Wrapf(err, "strata: column family %q", vf.Name())
		}
		cf := d.newColumnFamily(vf, o)
		if err := d.familyMergeOperatorLocked(cf); err != nil {
			return err
		}
		d.mu.fams = append(d.mu.fams, cf)
	}
	d.def = d.mu.fams[0]
	return nil
}

// createMissingFamiliesLocked creates the families Options.ColumnFamilies
// names that the database lacks, with CreateMissingColumnFamilies; without
// it (or ReadOnly) a missing name fails Open. d.mu must be held.
func (d *DB) createMissingFamiliesLocked() error {
	var missing []string
	for name := range d.opts.ColumnFamilies {
		if d.mu.versions.FamilyByName(name) == nil {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		switch {
		case d.opts.ReadOnly:
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q does not exist (and a read-only Open creates none)", name)
		case !d.opts.CreateMissingColumnFamilies:
			return errors.Wrapf(ErrInvalidArgument, "strata: column family %q does not exist and CreateMissingColumnFamilies is not set", name)
		}
		if _, err := d.createFamilyLocked(name, d.opts.ColumnFamilies[name], false); err != nil {
			return err
		}
	}
	return nil
}

// sweepLocked deletes what the directory listing shows to be obsolete:
// tables no version references, WALs older than the current one, old
// MANIFESTs and temporary files. A table or WAL it fails to remove joins
// the obsolete lists, for the next sweep to retry. d.mu must be held.
func (d *DB) sweepLocked(l dirListing) {
	live := d.mu.versions.LiveFileNums()
	for _, n := range l.tables {
		if _, ok := live[n]; !ok {
			if _, pending := d.mu.pendingOutputs[n]; !pending {
				if d.removeFile(base.FileKindTable, n) != nil {
					d.mu.obsoleteTables = append(d.mu.obsoleteTables, n)
				}
			}
		}
	}
	for _, n := range l.blobs {
		if _, ok := live[n]; ok {
			d.blobs.known[n] = struct{}{}
		} else if _, pending := d.mu.pendingOutputs[n]; !pending && !d.opts.ReadOnly {
			d.removeFile(base.FileKindBlob, n)
		}
	}
	for _, n := range l.logs {
		if n < d.mu.log.num && d.removeFile(base.FileKindLog, n) != nil {
			d.mu.obsoleteWALs = append(d.mu.obsoleteWALs, n)
		}
	}
	cur := d.mu.versions.ManifestFileNum()
	for _, n := range l.manifests {
		if n != cur {
			d.removeFile(base.FileKindManifest, n)
		}
	}
	for _, name := range l.temps {
		_ = d.fs.Remove(d.path(name))
	}
}

// writeIdentity writes IDENTITY: a random UUID, as RocksDB does.
func (d *DB) writeIdentity() error {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return errors.Wrap(err, "strata: generating database id")
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
	name := d.path(base.MakeFilename(base.FileKindIdentity, 0))
	f, err := d.fs.Create(name)
	if err != nil {
		return errors.Wrapf(err, "strata: creating %s", name)
	}
	_, err = f.Write([]byte(id))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Wrapf(err, "strata: writing %s", name)
	}
	d.identity = id
	return nil
}

// readIdentity loads the database id, creating IDENTITY if it is missing
// (as RocksDB does) unless read-only.
func (d *DB) readIdentity(exists bool) error {
	if d.identity != "" {
		return nil
	}
	if !exists {
		if d.opts.ReadOnly {
			return nil
		}
		return d.writeIdentity()
	}
	name := d.path(base.MakeFilename(base.FileKindIdentity, 0))
	f, err := d.fs.Open(name)
	if err != nil {
		return errors.Wrapf(err, "strata: opening %s", name)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return errors.Wrapf(err, "strata: reading %s", name)
	}
	d.identity = string(trimSpace(buf))
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
