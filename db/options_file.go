package db

// RocksDB OPTIONS files: the glue between a DB and internal/optionsfile,
// which holds the text format and the comparison of settings.
//
// Strata reads the newest OPTIONS file at Open to check that the database
// can be opened (a comparator other than leveldb.BytewiseComparator in any
// column family refuses Open with ErrInvalidArgument) and to take the
// options of the column families the caller's Options do not name. Nothing
// in the file overrides the caller's Options; the settings that differ
// from what Strata uses, or that name features Strata lacks, are listed by
// the PropOptionsFileReport property. The file has one [CFOptions "name"]
// and one [TableOptions/BlockBasedTable "name"] section per family, the
// default first, and is rewritten whenever a family is created or dropped,
// so that RocksDB's tools (which load families from it) agree with the
// MANIFEST. RocksDB rejects an unknown
// key, so Strata writes only keys RocksDB 7.8.3 defines, and omits the rest
// (RocksDB then uses its defaults).
//
// A writable Open writes a new OPTIONS file describing the options in force
// (written to OPTIONS-NNNNNN.dbtmp, synced, renamed, directory synced) and
// keeps only the two newest, as RocksDB does, so RocksDB's tools load
// settings that match the files Strata writes.

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/optionsfile"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/prefix"
)

// PropOptionsFileReport names the property that lists, one per line, the
// settings of the RocksDB OPTIONS file found at Open that Strata did not
// apply: "[Section] key=value: reason". Empty when every mapped setting
// matched or there was no OPTIONS file.
const PropOptionsFileReport = "strata.options-file-report"

// keptOptionsFiles is how many OPTIONS files a writable Open keeps.
const keptOptionsFiles = 2

// readOptionsFile reads and parses OPTIONS-num.
func (d *DB) readOptionsFile(num uint64) (*optionsfile.File, error) {
	name := base.MakeFilename(base.FileKindOptions, num)
	f, err := d.fs.Open(d.path(name))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: opening %s", name)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, optionsfile.MaxSize+1))
	if err != nil {
		return nil, errors.Wrapf(err, "strata: reading %s", name)
	}
	if len(data) > optionsfile.MaxSize {
		return nil, base.CorruptionErrorf("strata: %s is larger than %d bytes", name, optionsfile.MaxSize)
	}
	return optionsfile.Parse(name, data)
}

// checkOptionsFiles reads the newest of the OPTIONS files nums (ascending)
// and keeps it in d.optionsFile for the families' options and the report;
// it refuses a file Strata cannot open (another comparator). No OPTIONS
// file is fine: RocksDB does not require one.
func (d *DB) checkOptionsFiles(nums []uint64) error {
	if len(nums) == 0 {
		return nil
	}
	f, err := d.readOptionsFile(nums[len(nums)-1])
	if err != nil {
		return err
	}
	d.optionsFile = f
	return nil
}

// familyMergeOperatorLocked settles the merge operator of cf against the
// one its section of the OPTIONS file found at Open names, and adds what
// differs to the report. d.mu must be held (or the DB not yet shared).
func (d *DB) familyMergeOperatorLocked(cf *ColumnFamily) error {
	if d.optionsFile == nil {
		return nil
	}
	sec := d.optionsFile.Section(optionsfile.SecCF, cf.name)
	if sec == nil {
		return nil
	}
	v, ok := sec.Values["merge_operator"]
	if !ok {
		return nil
	}
	fileOp, _ := mergeOperatorID(v)
	if fileOp == "TtlMergeOperator" {
		// RocksDB's DBWithTTL records its wrapper over the user's
		// operator; Strata's TTL wraps the family's operator itself
		// (ttlMergeOperator), so the user's is the one to settle.
		v = optionsfile.ParseNested(v)["user_operator"]
		if v == "" {
			v = "nullptr"
		}
		fileOp, _ = mergeOperatorID(v)
	}
	if cf.id == 0 {
		d.fileMergeOperator = fileOp
	}
	if cf.opts.MergeOperator == nil && fileOp != "" {
		// The family was written with an operator and none is
		// configured. A writable handle would compact the operands into
		// tables that name no operator and rewrite the OPTIONS file with
		// nullptr, losing the record of how to read them: take the
		// built-in of that name, or refuse. A read-only handle changes
		// nothing: it opens, and reading a key with operands fails with an
		// error naming the operator.
		if op := MergeOperatorByName(v); op != nil {
			cf.opts.MergeOperator = op
			if cf.id == 0 {
				d.opts.MergeOperator = op
			}
			d.optionsReport = append(d.optionsReport, sec.Title()+" merge_operator="+v+": no Options.MergeOperator: using the built-in "+optionsMergeOperatorValue(op))
		} else if !d.opts.ReadOnly {
			return errors.Wrapf(ErrInvalidArgument,
				"strata: %s: column family %q was written with merge operator %s, which is not built in: set its MergeOperator (or open ReadOnly)", d.dirname, cf.name, fileOp)
		}
	}
	if line := mergeOperatorReport(sec.Title(), v, cf.opts.MergeOperator); line != "" {
		d.optionsReport = append(d.optionsReport, line)
	}
	return nil
}

// reportOptionsFileLocked compares the OPTIONS file found at Open with the
// options in force and records the settings that differ. d.mu must be
// held.
func (d *DB) reportOptionsFileLocked() {
	if d.optionsFile == nil {
		return
	}
	report, err := optionsfile.Check(d.optionsFile, d.optionsEntries())
	if err == nil {
		d.optionsReport = append(report, d.optionsReport...)
	}
}

// familyOptionsFromFile builds the options of family name from its
// sections of the OPTIONS file found at Open, over base (the DB's own
// options): what Open uses for a family the caller's Options do not name.
// A setting that does not parse, or a prefix extractor or merge operator
// that cannot be built from its recorded name, is an error wrapping
// ErrInvalidArgument that names the family.
func (d *DB) familyOptionsFromFile(name string, base Options) (Options, error) {
	c := base.ColumnFamilyOptions()
	if d.optionsFile == nil {
		return base, nil
	}
	bad := func(key, v string) error {
		return errors.Wrapf(ErrInvalidArgument, "strata: column family %q: OPTIONS file %s: %s=%s cannot be used",
			name, d.optionsFile.Name, key, v)
	}
	if sec := d.optionsFile.Section(optionsfile.SecCF, name); sec != nil {
		for k, v := range sec.Values {
			var err error
			switch k {
			case "write_buffer_size":
				c.WriteBufferSize, err = strconv.Atoi(v)
			case "max_write_buffer_number":
				c.MaxWriteBufferNumber, err = strconv.Atoi(v)
			case "compression":
				switch v {
				case "kNoCompression":
					c.Compression = NoCompression
				case "kSnappyCompression":
					c.Compression = SnappyCompression
				case "kZSTD", "kZSTDNotFinalCompression":
					c.Compression = ZstdCompression
				default:
					c.Compression = SnappyCompression // what Strata can write that is closest to RocksDB's default
				}
			case "prefix_extractor":
				c.PrefixExtractor, err = prefixExtractorFromOptions(v)
			case "merge_operator":
				id, _ := mergeOperatorID(v)
				if id != "" {
					op := MergeOperatorByName(v)
					if op == nil && !d.opts.ReadOnly {
						return base, errors.Wrapf(ErrInvalidArgument, "strata: column family %q: OPTIONS file %s names merge operator %s, which is not built in: give the family's options in Options.ColumnFamilies",
							name, d.optionsFile.Name, id)
					}
					c.MergeOperator = op
				}
			case "compaction_style":
				switch v {
				case "kCompactionStyleFIFO":
					c.CompactionStyle = FIFOCompaction
				default:
					c.CompactionStyle = LevelCompaction
				}
			case "compaction_options_fifo":
				n := optionsfile.ParseNested(v)
				if x, ok := n["max_table_files_size"]; ok {
					c.FIFOMaxTableFilesSize, err = strconv.ParseInt(x, 10, 64)
				}
				c.FIFOAllowCompaction = n["allow_compaction"] == "true"
			case "disable_auto_compactions":
				c.DisableAutoCompactions, err = strconv.ParseBool(v)
			case "level0_file_num_compaction_trigger":
				c.Level0FileNumCompactionTrigger, err = strconv.Atoi(v)
			case "level0_slowdown_writes_trigger":
				c.Level0SlowdownWritesTrigger, err = strconv.Atoi(v)
			case "level0_stop_writes_trigger":
				c.Level0StopWritesTrigger, err = strconv.Atoi(v)
			case "target_file_size_base":
				c.TargetFileSizeBase, err = strconv.ParseInt(v, 10, 64)
			case "max_bytes_for_level_base":
				c.MaxBytesForLevelBase, err = strconv.ParseInt(v, 10, 64)
			case "max_bytes_for_level_multiplier":
				var f float64
				f, err = strconv.ParseFloat(v, 64)
				c.MaxBytesForLevelMultiplier = int(f)
			case "level_compaction_dynamic_level_bytes":
				c.LevelCompactionDynamicLevelBytes, err = strconv.ParseBool(v)
			case "enable_blob_files":
				c.EnableBlobFiles, err = strconv.ParseBool(v)
			case "min_blob_size":
				c.MinBlobSize, err = strconv.ParseUint(v, 10, 64)
			case "blob_file_size":
				c.BlobFileSize, err = strconv.ParseUint(v, 10, 64)
			case "blob_compression_type":
				if c.BlobCompressionType, err = parseRocksDBCompression(v); err != nil {
					// A type Strata cannot write (LZ4, say): its blobs
					// stay readable; new ones are written uncompressed.
					c.BlobCompressionType, err = NoCompression, nil
				}
			case "enable_blob_garbage_collection":
				c.EnableBlobGarbageCollection, err = strconv.ParseBool(v)
			case "blob_garbage_collection_age_cutoff":
				c.BlobGarbageCollectionAgeCutoff, err = strconv.ParseFloat(v, 64)
			case "blob_garbage_collection_force_threshold":
				c.BlobGarbageCollectionForceThreshold, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				return base, bad(k, v)
			}
		}
	}
	if sec := d.optionsFile.Section(optionsfile.SecTable, name); sec != nil {
		for k, v := range sec.Values {
			var err error
			switch k {
			case "filter_policy":
				c.BloomBitsPerKey = 0
				if rest, ok := strings.CutPrefix(v, "bloomfilter:"); ok {
					bits, _, _ := strings.Cut(rest, ":")
					var f float64
					f, err = strconv.ParseFloat(bits, 64)
					c.BloomBitsPerKey = int(f + 0.5)
				}
			case "block_size":
				c.BlockSize, err = strconv.Atoi(v)
			case "index_type":
				if v == "kTwoLevelIndexSearch" {
					c.IndexType = IndexTwoLevelSearch
				} else {
					c.IndexType = IndexBinarySearch
				}
			case "partition_filters":
				c.PartitionFilters, err = strconv.ParseBool(v)
			case "metadata_block_size":
				c.MetadataBlockSize, err = strconv.Atoi(v)
			}
			if err != nil {
				return base, bad(k, v)
			}
		}
	}
	// RocksDB accepts write buffers below Strata's floor and raises them
	// silently; so does Open here, for a family it reads from a file.
	c.WriteBufferSize = max(c.WriteBufferSize, 64<<10)
	o, err := base.withFamily(&c)
	if err != nil {
		return base, errors.Wrapf(err, "strata: column family %q: options from %s", name, d.optionsFile.Name)
	}
	return o, nil
}

// prefixExtractorFromOptions builds the extractor an OPTIONS file's
// prefix_extractor value names: RocksDB's built-ins, in their option-string
// or Name() forms.
func prefixExtractorFromOptions(v string) (prefix.Extractor, error) {
	switch {
	case v == "" || v == "nullptr":
		return nil, nil
	case v == "rocksdb.Noop":
		return prefix.Noop(), nil
	}
	for _, f := range []struct {
		names []string
		make  func(int) prefix.Extractor
	}{
		{[]string{"rocksdb.FixedPrefix.", "fixed:"}, prefix.Fixed},
		{[]string{"rocksdb.CappedPrefix.", "capped:"}, prefix.Capped},
	} {
		for _, p := range f.names {
			if n, ok := strings.CutPrefix(v, p); ok {
				k, err := strconv.Atoi(n)
				if err != nil || k <= 0 {
					return nil, errors.Newf("bad length %q", n)
				}
				return f.make(k), nil
			}
		}
	}
	return nil, errors.Newf("unknown prefix extractor %q", v)
}

// optionsEntries lists the options in force in RocksDB's syntax, in the
// order Strata writes them. Mutable options are read as they are now.
func (d *DB) optionsEntries() []optionsfile.Entry {
	o := &d.opts
	var out []optionsfile.Entry
	add := func(section, arg, key, value string) *optionsfile.Entry {
		out = append(out, optionsfile.Entry{Section: section, Arg: arg, Key: key, Value: value})
		return &out[len(out)-1]
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	add(optionsfile.SecVersion, "", "rocksdb_version", "7.8.3").OpenOnly = true
	add(optionsfile.SecVersion, "", "options_file_version", "1.1").OpenOnly = true

	add(optionsfile.SecDB, "", "create_if_missing", strconv.FormatBool(o.CreateIfMissing)).OpenOnly = true
	add(optionsfile.SecDB, "", "error_if_exists", strconv.FormatBool(o.ErrorIfExists)).OpenOnly = true
	add(optionsfile.SecDB, "", "max_background_jobs", itoa(int64(o.MaxBackgroundJobs)))
	add(optionsfile.SecDB, "", "max_subcompactions", itoa(int64(d.subcompactionLimit())))
	add(optionsfile.SecDB, "", "max_open_files", itoa(int64(o.MaxOpenFiles))).OpenOnly = true
	add(optionsfile.SecDB, "", "wal_recovery_mode", o.WALRecoveryMode.String()).OpenOnly = true
	// Fixed for an Open, as in RocksDB; a file recording another value is
	// reported (it describes how the database's WALs were written).
	add(optionsfile.SecDB, "", "recycle_log_file_num", itoa(int64(o.RecycleLogFileNum)))

	for _, fam := range d.mu.fams {
		out = fam.optionsEntries(out)
	}
	return out
}

// optionsEntries appends the family's sections of the OPTIONS file to out.
func (fam *ColumnFamily) optionsEntries(out []optionsfile.Entry) []optionsfile.Entry {
	o := &fam.opts
	add := func(section, arg, key, value string) *optionsfile.Entry {
		out = append(out, optionsfile.Entry{Section: section, Arg: arg, Key: key, Value: value})
		return &out[len(out)-1]
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	cf := func(key, value string) *optionsfile.Entry { return add(optionsfile.SecCF, fam.name, key, value) }
	cf("comparator", fam.cmp.Name)
	cf("merge_operator", optionsMergeOperatorValue(o.MergeOperator)).OpenOnly = true // reported by mergeOperatorReport
	cf("table_factory", "BlockBasedTable").OpenOnly = true
	cf("write_buffer_size", itoa(fam.writeBufferSize.Load()))
	cf("max_write_buffer_number", itoa(int64(o.MaxWriteBufferNumber)))
	cf("compression", rocksdbCompressionName(o.Compression))
	cf("prefix_extractor", fam.rocksdbPrefixExtractorName())
	cf("num_levels", itoa(version.NumLevels))
	style := "kCompactionStyleLevel"
	if o.CompactionStyle == FIFOCompaction {
		style = "kCompactionStyleFIFO"
	}
	cf("compaction_style", style)
	fifo := cf("compaction_options_fifo", fmt.Sprintf("{allow_compaction=%t;max_table_files_size=%d;}",
		o.FIFOAllowCompaction, o.FIFOMaxTableFilesSize))
	fifo.Equal = func(file, ours string) bool {
		if o.CompactionStyle != FIFOCompaction {
			return true // irrelevant under level compaction
		}
		f, s := optionsfile.ParseNested(file), optionsfile.ParseNested(ours)
		return f["allow_compaction"] == s["allow_compaction"] && f["max_table_files_size"] == s["max_table_files_size"]
	}
	// compaction_filter is the filter's Name, as RocksDB writes it. A
	// filter is code: Open never makes one from the file, and a file
	// naming one the options lack is reported.
	filterName := "nullptr"
	if o.CompactionFilter != nil {
		filterName = o.CompactionFilter.Name()
	}
	cf("compaction_filter", filterName)
	// ttl is RocksDB 7.8's ColumnFamilyOptions::ttl, the age at which FIFO
	// drops a table (RocksDB writes it here, not in compaction_options_fifo,
	// since compaction_options_fifo.ttl was retired). Strata writes its TTL
	// in seconds (0: none). It is never read back into Options.TTL: the
	// value format of DBWithTTL is not in the OPTIONS file (RocksDB's ttl
	// defaults to 30 days in databases without it), so TTL is always the
	// caller's. Under level compaction it only schedules compactions in
	// RocksDB, and a difference is not reported.
	cf("ttl", itoa(fam.ttlSeconds())).Equal = func(file, ours string) bool {
		return o.CompactionStyle != FIFOCompaction || file == ours
	}
	cf("disable_auto_compactions", strconv.FormatBool(fam.comp.disableAuto.Load()))
	cf("level0_file_num_compaction_trigger", itoa(int64(o.Level0FileNumCompactionTrigger)))
	cf("level0_slowdown_writes_trigger", itoa(int64(o.Level0SlowdownWritesTrigger)))
	cf("level0_stop_writes_trigger", itoa(int64(o.Level0StopWritesTrigger)))
	cf("target_file_size_base", itoa(o.TargetFileSizeBase))
	cf("max_bytes_for_level_base", itoa(o.MaxBytesForLevelBase))
	cf("max_bytes_for_level_multiplier", fmt.Sprintf("%f", float64(o.MaxBytesForLevelMultiplier))).Equal = optionsfile.SameFloat
	cf("level_compaction_dynamic_level_bytes", strconv.FormatBool(o.LevelCompactionDynamicLevelBytes))
	b := fam.blob.Load()
	cf("enable_blob_files", strconv.FormatBool(b.enable))
	cf("min_blob_size", strconv.FormatUint(b.minSize, 10))
	cf("blob_file_size", strconv.FormatUint(b.fileSize, 10))
	cf("blob_compression_type", rocksdbCompressionName(b.compression))
	cf("enable_blob_garbage_collection", strconv.FormatBool(b.gc))
	cf("blob_garbage_collection_age_cutoff", fmt.Sprintf("%f", b.ageCutoff)).Equal = optionsfile.SameFloat
	cf("blob_garbage_collection_force_threshold", fmt.Sprintf("%f", b.forceThreshold)).Equal = optionsfile.SameFloat

	t := func(key, value string) *optionsfile.Entry { return add(optionsfile.SecTable, fam.name, key, value) }
	filter := "nullptr"
	if o.BloomBitsPerKey > 0 {
		filter = fmt.Sprintf("bloomfilter:%d:false", o.BloomBitsPerKey)
	}
	t("filter_policy", filter)
	t("whole_key_filtering", "true")
	t("cache_index_and_filter_blocks", strconv.FormatBool(o.CacheIndexAndFilterBlocks))
	t("cache_index_and_filter_blocks_with_high_priority", strconv.FormatBool(!o.DisableCacheIndexAndFilterBlocksWithHighPriority))
	t("block_size", itoa(int64(o.BlockSize)))
	t("block_restart_interval", "16")
	t("index_block_restart_interval", "1")
	t("index_type", o.IndexType.String())
	t("partition_filters", strconv.FormatBool(o.PartitionFilters && o.IndexType == IndexTwoLevelSearch))
	t("metadata_block_size", itoa(int64(o.MetadataBlockSize)))
	t("data_block_index_type", "kDataBlockBinarySearch").OpenOnly = true
	t("enable_index_compression", "true")
	t("checksum", "kXXH3")
	t("format_version", "5")
	return out
}

// rocksdbCompressionName is RocksDB's CompressionType name for c.
func rocksdbCompressionName(c Compression) string {
	switch c {
	case SnappyCompression:
		return "kSnappyCompression"
	case ZstdCompression:
		return "kZSTD"
	}
	return "kNoCompression"
}

// rocksdbPrefixExtractorName is the prefix_extractor value RocksDB can load
// for the extractor in force: a built-in's name, else nullptr (tables carry
// the extractor name they were written with either way).
func (cf *ColumnFamily) rocksdbPrefixExtractorName() string {
	h := cf.extractor.Load()
	if h == nil {
		return "nullptr"
	}
	return optionsfile.PrefixExtractorName(h.name)
}

// writeOptionsFileLocked writes a new OPTIONS file for the options in force
// and deletes all but the newest keptOptionsFiles of d.mu.optionsFiles.
// d.mu must be held.
func (d *DB) writeOptionsFileLocked() error {
	num := d.mu.versions.NextFileNum()
	name := base.MakeFilename(base.FileKindOptions, num)
	tmp := d.path(name + ".dbtmp")
	if err := d.writeFileSynced(tmp, optionsfile.Render(d.optionsEntries())); err != nil {
		_ = d.fs.Remove(tmp)
		return err
	}
	if err := d.fs.Rename(tmp, d.path(name)); err != nil {
		_ = d.fs.Remove(tmp)
		return errors.Wrapf(err, "strata: renaming %s", tmp)
	}
	if err := d.syncDir(); err != nil {
		return err
	}
	all := append(d.mu.optionsFiles, num)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	kept := all[:0]
	for i, n := range all {
		// One whose removal failed stays listed and goes at a later write.
		if i >= len(all)-keptOptionsFiles || d.removeFile(base.FileKindOptions, n) != nil {
			kept = append(kept, n)
		}
	}
	d.mu.optionsFiles = kept
	return nil
}

// writeOptionsFile writes a new OPTIONS file after a change of the mutable
// options (SetOptions), keeping the two newest.
func (d *DB) writeOptionsFile() error {
	if d.opts.ReadOnly {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.writeOptionsFileLocked()
}

func (d *DB) writeFileSynced(path string, data []byte) error {
	if err := vfs.WriteFileSynced(d.fs, path, data); err != nil {
		return errors.Wrapf(err, "strata: writing %s", path)
	}
	return nil
}

// optionsFileReport is the value of PropOptionsFileReport.
func (d *DB) optionsFileReport() string {
	if len(d.optionsReport) == 0 {
		return ""
	}
	return strings.Join(d.optionsReport, "\n") + "\n"
}

// mergeOperatorID returns the operator name of an OPTIONS file's
// merge_operator value ("" for nullptr) and its delimiter option (","
// when absent).
func mergeOperatorID(v string) (id, delim string) {
	delim = ","
	if strings.HasPrefix(v, "{") {
		m := optionsfile.ParseNested(v)
		id = m["id"]
		if d, ok := m["delimiter"]; ok {
			delim = unescapeOptionValue(d)
		}
	} else {
		id = v
	}
	if id == "nullptr" {
		id = ""
	}
	return id, delim
}

// unescapeOptionValue undoes RocksDB's escaping of option values (a
// backslash before a special character).
func unescapeOptionValue(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// optionsMergeOperatorValue is the merge_operator value of the OPTIONS file
// for op, in RocksDB's syntax.
func optionsMergeOperatorValue(op MergeOperator) string {
	if op == nil {
		return "nullptr"
	}
	if s, ok := op.(*stringAppend); ok {
		d := s.delim
		if strings.ContainsAny(d, `:;{}=\#`) {
			var b strings.Builder
			for i := 0; i < len(d); i++ {
				if strings.IndexByte(`:;{}=\#`, d[i]) >= 0 {
					b.WriteByte('\\')
				}
				b.WriteByte(d[i])
			}
			d = b.String()
		}
		return "{id=" + s.name + ";delimiter=" + d + ";}"
	}
	return op.Name()
}

// mergeOperatorReport is the OPTIONS file report line for a file's
// merge_operator value v when it differs from the configured op ("" when
// they agree).
func mergeOperatorReport(title, v string, op MergeOperator) string {
	id, _ := mergeOperatorID(v)
	switch {
	case op == nil && id == "":
		return ""
	case op == nil:
		return title + " merge_operator=" + v + ": no Options.MergeOperator: reading a key with merge operands fails"
	case optionsMergeOperatorValue(op) == v || (id == op.Name() && !strings.HasPrefix(v, "{")):
		return ""
	}
	return title + " merge_operator=" + v + ": Strata uses " + optionsMergeOperatorValue(op)
}
