package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/blob"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/table"
)

// blobWriter writes the blob files of one flush or compaction, in RocksDB
// 7.8's format: a header, one record per value (header, key, value) and,
// once the file reaches blob_file_size or the job ends, a footer. The
// files are pending outputs until the job's MANIFEST edit records them
// (noteBlobFilesLocked). d.mu must not be held while it writes.
type blobWriter struct {
	d  *DB
	cf *ColumnFamily
	s  *blobSettings

	f     *bufferedTableFile
	num   uint64
	name  string
	off   uint64
	count uint64
	bytes uint64
	// written are the files finished, all (finished or not) are named in
	// nums for abandon.
	written []version.BlobFileAddition
	nums    []uint64
	rec     []byte
	cbuf    []byte
	idx     []byte
}

// newBlobWriter returns the family's blob writer for a job, or nil when
// blob files are off.
func (cf *ColumnFamily) newBlobWriter() *blobWriter {
	s := cf.blob.Load()
	if s == nil || !s.enable {
		return nil
	}
	return &blobWriter{d: cf.d, cf: cf, s: s}
}

// wants reports whether value goes to a blob file.
func (w *blobWriter) wants(value []byte) bool {
	return w != nil && uint64(len(value)) >= w.s.minSize && len(value) > 0
}

// add writes one value and returns its blob index (valid until the next
// add) and the blob file's number.
func (w *blobWriter) add(ukey, value []byte) ([]byte, uint64, error) {
	if w.f == nil {
		if err := w.open(); err != nil {
			return nil, 0, err
		}
	}
	stored := value
	comp := w.s.compression.tableCompression()
	if comp != table.NoCompression {
		var err error
		if w.cbuf, err = table.CompressValue(w.cbuf, value, comp); err != nil {
			return nil, 0, errors.Wrapf(err, "strata: blob file %s", w.name)
		}
		stored = w.cbuf
	}
	// The head (header and key) and the value go to the file's buffer
	// apart: the value is copied once, from where it lies, not first into
	// a record of its own.
	w.rec = blob.AppendRecordHead(w.rec[:0], ukey, stored, 0)
	if _, err := w.f.Write(w.rec); err != nil {
		return nil, 0, errors.Wrapf(err, "strata: writing blob file %s", w.name)
	}
	if _, err := w.f.Write(stored); err != nil {
		return nil, 0, errors.Wrapf(err, "strata: writing blob file %s", w.name)
	}
	valueOff := w.off + uint64(len(w.rec))
	n := uint64(len(w.rec) + len(stored))
	w.off += n
	w.count++
	w.bytes += n
	w.idx = blob.AppendIndex(w.idx[:0], w.num, valueOff, uint64(len(stored)), byte(comp))
	num := w.num
	if w.off >= w.s.fileSize {
		if err := w.closeFile(); err != nil {
			return nil, 0, err
		}
	}
	return w.idx, num, nil
}

func (w *blobWriter) open() error {
	d := w.d
	d.mu.Lock()
	if d.mu.closing {
		d.mu.Unlock()
		return errCompactionAborted
	}
	w.num = d.mu.versions.NextFileNum()
	d.mu.pendingOutputs[w.num] = struct{}{}
	d.mu.Unlock()
	w.nums = append(w.nums, w.num)
	w.name = base.MakeFilename(base.FileKindBlob, w.num)
	f, err := d.fs.Create(d.path(w.name))
	if err != nil {
		return errors.Wrapf(err, "strata: creating blob file %s", w.name)
	}
	w.f = newBufferedTableFile(f)
	hdr := blob.AppendHeader(nil, blob.Header{ColumnFamily: w.cf.id, Compression: byte(w.s.compression.tableCompression())})
	if _, err := w.f.Write(hdr); err != nil {
		return errors.Wrapf(err, "strata: writing blob file %s", w.name)
	}
	w.off, w.count, w.bytes = uint64(len(hdr)), 0, 0
	return nil
}

// closeFile writes the footer, syncs and closes the current file.
func (w *blobWriter) closeFile() error {
	_, err := w.f.Write(blob.AppendFooter(nil, blob.Footer{BlobCount: w.count}))
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if err != nil {
		return errors.Wrapf(err, "strata: finishing blob file %s", w.name)
	}
	w.written = append(w.written, version.BlobFileAddition{FileNum: w.num, TotalCount: w.count, TotalBytes: w.bytes})
	return nil
}

// finish closes the open file and makes the directory entries durable; it
// returns the files written, for the job's MANIFEST edit.
func (w *blobWriter) finish() ([]version.BlobFileAddition, error) {
	if w == nil {
		return nil, nil
	}
	if w.f != nil {
		if err := w.closeFile(); err != nil {
			return nil, err
		}
	}
	if len(w.written) > 0 {
		if err := w.d.syncDir(); err != nil {
			return nil, err
		}
	}
	return w.written, nil
}

// abandon deletes every file of a job that failed. d.mu must not be held.
func (w *blobWriter) abandon() {
	if w == nil {
		return
	}
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	d := w.d
	for _, n := range w.nums {
		d.fs.Remove(d.path(base.MakeFilename(base.FileKindBlob, n)))
	}
	d.mu.Lock()
	for _, n := range w.nums {
		delete(d.mu.pendingOutputs, n)
	}
	d.mu.Unlock()
	w.nums, w.written = nil, nil
}

// noteBlobFilesLocked makes blob files recorded in the MANIFEST known to
// the obsolete-file sweep and ends their pending state. d.mu must be held.
func (d *DB) noteBlobFilesLocked(adds []version.BlobFileAddition) {
	for _, a := range adds {
		delete(d.mu.pendingOutputs, a.FileNum)
		d.blobs.known[a.FileNum] = struct{}{}
	}
}

// blobFileBytes is the size on disk of the blob files adds describes.
func blobFileBytes(adds []version.BlobFileAddition) uint64 {
	var n uint64
	for _, a := range adds {
		n += blob.HeaderSize + a.TotalBytes + blob.FooterSize
	}
	return n
}
