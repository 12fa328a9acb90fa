package db

import (
	"strings"
	"sync"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/cache"
	"github.com/stratadb/strata/internal/vfs"
	"github.com/stratadb/strata/table"
)

// blobFiles reads values out of blob files (RocksDB's integrated BlobDB,
// internal/blob has the format). An open file stays open until the file is
// deleted or the DB closes: a blob file is read only while a version lists
// it, and is deleted only once no live version does, so no read can be
// using a handle when it is closed. Values are cached decompressed in the
// block cache, charged like blocks, keyed by the file's cache id and the
// value's offset (RocksDB's blob cache may share the block cache too).
type blobFiles struct {
	fs      vfs.FS
	dirname string
	bcache  *cache.Cache

	mu    sync.Mutex
	files map[uint64]*blobReader
	// known are the blob files on disk (found at Open or written since),
	// the candidates of the obsolete-file sweep. Guarded by d.mu, not mu.
	known map[uint64]struct{}
}

type blobReader struct {
	name    string
	f       vfs.File
	size    int64
	cacheID uint64
	header  blob.Header
}

func newBlobFiles(d *DB) *blobFiles {
	return &blobFiles{fs: d.fs, dirname: d.dirname, bcache: d.cache,
		files: make(map[uint64]*blobReader), known: make(map[uint64]struct{})}
}

func (b *blobFiles) open(num uint64) (*blobReader, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.files[num]; r != nil {
		return r, nil
	}
	name := base.MakeFilename(base.FileKindBlob, num)
	f, err := b.fs.Open(b.dirname + "/" + name)
	if err != nil {
		return nil, errors.Wrapf(err, "strata: opening blob file %s", name)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "strata: blob file %s", name)
	}
	r := &blobReader{name: name, f: f, size: fi.Size(), cacheID: b.bcache.NewID()}
	if r.size < blob.HeaderSize+blob.FooterSize {
		f.Close()
		return nil, base.CorruptionErrorf("blob file %s: offset 0: file of %d bytes is shorter than a header and footer", name, r.size)
	}
	var hdr [blob.HeaderSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "strata: reading blob file %s header", name)
	}
	if r.header, err = blob.DecodeHeader(name, hdr[:]); err != nil {
		f.Close()
		return nil, err
	}
	// A version lists only finished files: the footer must be there, as
	// RocksDB's BlobFileReader requires.
	var ftr [blob.FooterSize]byte
	footOff := r.size - blob.FooterSize
	if _, err := f.ReadAt(ftr[:], footOff); err != nil {
		f.Close()
		return nil, errors.Wrapf(err, "strata: reading blob file %s footer", name)
	}
	if _, err := blob.DecodeFooter(name, footOff, ftr[:]); err != nil {
		f.Close()
		return nil, err
	}
	b.files[num] = r
	return r, nil
}

// forget closes num's handle and drops its cached values (the file is
// being deleted).
func (b *blobFiles) forget(num uint64) {
	b.mu.Lock()
	r := b.files[num]
	delete(b.files, num)
	b.mu.Unlock()
	if r != nil {
		b.bcache.EvictFile(r.cacheID)
		r.f.Close()
	}
}

func (b *blobFiles) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for num, r := range b.files {
		r.f.Close()
		delete(b.files, num)
	}
}

// get returns the value a blob index found under key refers to: a copy
// the caller owns (never block-cache memory, which is released before get
// returns), but for an inlined value, which aliases index: the caller must
// not modify it (copy before handing it to a user who may).
func (b *blobFiles) get(key, index []byte) ([]byte, error) { return b.read(key, index, true) }

// getNoFill is get for compactions: a value the cache lacks is read
// without being added to it, as RocksDB's compactions read blobs with
// fill_cache off. A compaction reads each blob it needs once, and caching
// them would push out what reads use.
func (b *blobFiles) getNoFill(key, index []byte) ([]byte, error) { return b.read(key, index, false) }

func (b *blobFiles) read(key, index []byte, fill bool) ([]byte, error) {
	x, err := blob.DecodeIndex(key, index)
	if err != nil {
		return nil, err
	}
	if x.Type == blob.IndexInlinedTTL {
		return x.Inline, nil
	}
	r, err := b.open(x.FileNum)
	if err != nil {
		return nil, err
	}
	if h, ok := b.bcache.Get(r.cacheID, x.Offset); ok {
		// The cache's memory is released here: the caller gets a copy.
		c := h.Bytes()
		v := make([]byte, len(c))
		copy(v, c)
		h.Release()
		return v, nil
	}
	over := uint64(blob.RecordHeaderSize + len(key))
	if x.Offset < blob.HeaderSize+over || x.Size > uint64(r.size) || x.Offset > uint64(r.size)-x.Size {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: blob of %d bytes (key %q) lies outside the file of %d bytes",
			r.name, x.Offset, x.Size, key, r.size)
	}
	if x.Compression != r.header.Compression {
		return nil, base.CorruptionErrorf("blob file %s: offset %d: index names compression %d, the file %d",
			r.name, x.Offset, x.Compression, r.header.Compression)
	}
	rec := make([]byte, over+x.Size)
	if _, err := r.f.ReadAt(rec, int64(x.Offset-over)); err != nil {
		return nil, errors.Wrapf(err, "strata: reading blob file %s at offset %d", r.name, x.Offset-over)
	}
	v, err := blob.CheckRecord(r.name, int64(x.Offset), rec, key, x.Size)
	if err != nil {
		return nil, err
	}
	if x.Compression != 0 {
		out, msg := table.DecompressValue(table.Compression(x.Compression), v)
		if msg != "" {
			return nil, base.CorruptionErrorf("blob file %s: offset %d: %s", r.name, x.Offset, msg)
		}
		v = out
	} else {
		v = v[:len(v):len(v)]
	}
	if fill {
		b.bcache.Set(r.cacheID, x.Offset, v)
	}
	return v, nil
}

// getCopy is get with a private copy of the value.
func (b *blobFiles) getCopy(key, index []byte) ([]byte, error) {
	v, err := b.get(key, index)
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(v)), v...), nil
}

// blobSettings are a family's blob file options in force; immutable once
// stored (SetOptions installs a new one).
type blobSettings struct {
	enable         bool
	minSize        uint64
	fileSize       uint64
	compression    Compression
	gc             bool
	ageCutoff      float64
	forceThreshold float64
}

func blobSettingsOf(o *Options) *blobSettings {
	return &blobSettings{enable: o.EnableBlobFiles, minSize: o.MinBlobSize, fileSize: o.BlobFileSize,
		compression: o.BlobCompressionType, gc: o.EnableBlobGarbageCollection,
		ageCutoff: o.BlobGarbageCollectionAgeCutoff, forceThreshold: o.BlobGarbageCollectionForceThreshold}
}

// setOptions writes b into o's blob fields.
func (b *blobSettings) setOptions(o *Options) {
	o.EnableBlobFiles, o.MinBlobSize, o.BlobFileSize = b.enable, b.minSize, b.fileSize
	o.BlobCompressionType, o.EnableBlobGarbageCollection = b.compression, b.gc
	o.BlobGarbageCollectionAgeCutoff, o.BlobGarbageCollectionForceThreshold = b.ageCutoff, b.forceThreshold
}

// tableCompression is c as a table.Compression.
func (c Compression) tableCompression() table.Compression {
	switch c {
	case SnappyCompression:
		return table.SnappyCompression
	case ZstdCompression:
		return table.ZSTDCompression
	}
	return table.NoCompression
}

// parseRocksDBCompression parses a RocksDB CompressionType name Strata can
// write.
func parseRocksDBCompression(v string) (Compression, error) {
	switch strings.TrimSpace(v) {
	case "kNoCompression":
		return NoCompression, nil
	case "kSnappyCompression":
		return SnappyCompression, nil
	case "kZSTD", "kZSTDNotFinalCompression":
		return ZstdCompression, nil
	}
	return 0, errors.Newf("want kNoCompression, kSnappyCompression or kZSTD")
}
