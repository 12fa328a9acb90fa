package raftstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/hashicorp/raft"
	"github.com/stratadb/strata/db"
)

// Commands of the key-value state machine. A command is one op byte, then
// for a put: uvarint key length, key, value (the rest); for a delete: the
// key (the rest).
const (
	opPut    = 1
	opDelete = 2
)

// EncodePut returns the raft command that makes FSM store value under key.
func EncodePut(key, value []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+len(value))
	b = append(b, opPut)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return append(b, value...)
}

// EncodeDelete returns the raft command that makes FSM delete key.
func EncodeDelete(key []byte) []byte {
	return append([]byte{opDelete}, key...)
}

// FSM is a raft.FSM holding a key-value map in a Strata database. Apply
// takes the commands EncodePut and EncodeDelete make; Snapshot is a
// checkpoint of the database, streamed into the snapshot sink as an
// archive of its files; Restore unpacks such an archive into a fresh
// directory and swaps the database for the one it holds.
//
// Its directory holds the live database in a subdirectory db-N and a file
// FSM-CURRENT naming N; a restore writes db-N+1, then renames a new
// FSM-CURRENT into place, so after a crash the directory holds either the
// old or the new state, never a mix.
type FSM struct {
	dir    string
	dbOpts db.Options

	mu  sync.RWMutex // guards d and gen against a Restore swapping them
	d   *db.DB
	gen uint64

	snapSeq uint64 // names checkpoint directories; FSM goroutine only
}

var _ raft.FSM = (*FSM)(nil)

const fsmCurrent = "FSM-CURRENT"

// OpenFSM opens (creating if missing) a key-value state machine in dir.
// dbOpts may be nil.
func OpenFSM(dir string, dbOpts *db.Options) (*FSM, error) {
	f := &FSM{dir: dir}
	if dbOpts != nil {
		f.dbOpts = *dbOpts
	}
	f.dbOpts.CreateIfMissing = true
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errors.Wrap(err, "raftstore: fsm directory")
	}
	gen := uint64(1)
	if b, err := os.ReadFile(filepath.Join(dir, fsmCurrent)); err == nil {
		gen, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || gen == 0 {
			return nil, errors.Wrapf(db.ErrCorruption, "raftstore: %s holds %q", filepath.Join(dir, fsmCurrent), b)
		}
	} else if !os.IsNotExist(err) {
		return nil, errors.Wrap(err, "raftstore: fsm directory")
	}
	// Remove what an interrupted restore or snapshot left behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, errors.Wrap(err, "raftstore: fsm directory")
	}
	for _, e := range entries {
		n := e.Name()
		if n != fsmCurrent && n != dbDirName(gen) {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return nil, errors.Wrap(err, "raftstore: fsm directory")
			}
		}
	}
	o := f.dbOpts
	d, err := db.Open(filepath.Join(dir, dbDirName(gen)), &o)
	if err != nil {
		return nil, err
	}
	f.d, f.gen = d, gen
	return f, nil
}

func dbDirName(gen uint64) string { return fmt.Sprintf("db-%d", gen) }

// Close closes the database.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.d.Close()
}

// Get reads key from the state machine. Reads on a follower may be stale;
// read on the leader after raft.Barrier or VerifyLeader for a linearizable
// read.
func (f *FSM) Get(key []byte) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.d.Get(key, nil)
}

// LinearizableGet reads key on the leader r with linearizable semantics:
// it commits a raft barrier, which makes the FSM apply every entry
// committed before it, and then reads. A barrier commits only while r
// leads a quorum, so every write acknowledged before the call is in the
// state read; anything newer in it is committed too. It fails (with
// raft.ErrNotLeader, for one) when r is not the leader; the caller retries
// on the current leader. f must be r's state machine. Each read costs one
// synced log write on a quorum.
func (f *FSM) LinearizableGet(r *raft.Raft, key []byte, timeout time.Duration) ([]byte, error) {
	if err := r.Barrier(timeout).Error(); err != nil {
		return nil, err
	}
	return f.Get(key)
}

// View runs fn with the current database; a Restore waits until fn
// returns. fn must not keep d.
func (f *FSM) View(fn func(d *db.DB) error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return fn(f.d)
}

// Apply applies one committed log entry. It returns nil or the error the
// command caused (the result of raft's ApplyFuture.Response).
func (f *FSM) Apply(l *raft.Log) interface{} {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return applyCommand(f.d, l.Data)
}

func applyCommand(d *db.DB, cmd []byte) error {
	if len(cmd) == 0 {
		return errors.Wrap(db.ErrInvalidArgument, "raftstore: empty command")
	}
	switch cmd[0] {
	case opPut:
		n, k := binary.Uvarint(cmd[1:])
		if k <= 0 || n > uint64(len(cmd)-1-k) {
			return errors.Wrap(db.ErrInvalidArgument, "raftstore: malformed put command")
		}
		key := cmd[1+k : 1+k+int(n)]
		return d.Put(key, cmd[1+k+int(n):], nil)
	case opDelete:
		return d.Delete(cmd[1:], nil)
	default:
		return errors.Wrapf(db.ErrInvalidArgument, "raftstore: unknown command op %d", cmd[0])
	}
}

// Snapshot takes a checkpoint of the database. raft calls it on the FSM
// goroutine, so the checkpoint holds exactly the entries applied so far;
// Persist then streams it while Apply goes on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	f.snapSeq++
	dir := filepath.Join(f.dir, fmt.Sprintf("snap-%d-%d", f.gen, f.snapSeq))
	if err := f.d.Checkpoint(dir); err != nil {
		return nil, errors.Wrap(err, "raftstore: snapshot checkpoint")
	}
	return &fsmSnapshot{dir: dir}, nil
}

type fsmSnapshot struct{ dir string }

// Persist writes the checkpoint to sink as an archive.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeArchive(sink, s.dir); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release removes the checkpoint.
func (s *fsmSnapshot) Release() { _ = os.RemoveAll(s.dir) }

// Restore replaces the state with the archive rc holds.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.mu.RLock()
	gen := f.gen + 1
	f.mu.RUnlock()
	dir := filepath.Join(f.dir, dbDirName(gen))
	if err := os.RemoveAll(dir); err != nil {
		return errors.Wrap(err, "raftstore: restore")
	}
	if err := readArchive(rc, dir); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	o := f.dbOpts
	o.ErrorIfExists = false
	nd, err := db.Open(dir, &o)
	if err != nil {
		_ = os.RemoveAll(dir)
		return errors.Wrap(err, "raftstore: opening restored snapshot")
	}
	// Make the new generation current before dropping the old one.
	if err := writeFileSync(filepath.Join(f.dir, fsmCurrent), []byte(strconv.FormatUint(gen, 10)+"\n")); err != nil {
		_ = nd.Close()
		return err
	}
	f.mu.Lock()
	old, oldGen := f.d, f.gen
	f.d, f.gen = nd, gen
	f.mu.Unlock()
	err = old.Close()
	_ = os.RemoveAll(filepath.Join(f.dir, dbDirName(oldGen)))
	return errors.Wrap(err, "raftstore: closing replaced database")
}

// writeFileSync atomically replaces name with data: a synced temporary
// file renamed over it, then the directory synced.
func writeFileSync(name string, data []byte) error {
	tmp := name + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return errors.Wrap(err, "raftstore")
	}
	if _, err = fh.Write(data); err == nil {
		err = fh.Sync()
	}
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err == nil {
		err = syncDir(filepath.Dir(name))
	}
	return errors.Wrapf(err, "raftstore: writing %s", name)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Snapshot archive layout:
//
//	magic "STRATA-RAFT-SNAP\x01"
//	per file: uvarint name length (> 0), name, uvarint size, contents,
//	          4-byte big-endian CRC-32C of the contents
//	end:      uvarint 0
//
// Names are plain file names (a checkpoint is one flat directory).
const archiveMagic = "STRATA-RAFT-SNAP\x01"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func writeArchive(w io.Writer, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return errors.Wrap(err, "raftstore: snapshot")
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return errors.Newf("raftstore: snapshot: %s is not a regular file", e.Name())
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString(archiveMagic); err != nil {
		return errors.Wrap(err, "raftstore: writing snapshot")
	}
	var hdr [2 * binary.MaxVarintLen64]byte
	for _, name := range names {
		if err := func() error {
			fh, err := os.Open(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			defer fh.Close()
			st, err := fh.Stat()
			if err != nil {
				return err
			}
			h := binary.AppendUvarint(hdr[:0], uint64(len(name)))
			if _, err := bw.Write(h); err != nil {
				return err
			}
			if _, err := bw.WriteString(name); err != nil {
				return err
			}
			if _, err := bw.Write(binary.AppendUvarint(hdr[:0], uint64(st.Size()))); err != nil {
				return err
			}
			crc := crc32.New(castagnoli)
			n, err := io.Copy(io.MultiWriter(bw, crc), fh)
			if err != nil {
				return err
			}
			if n != st.Size() {
				return errors.Newf("%s changed size while archived", name)
			}
			_, err = bw.Write(binary.BigEndian.AppendUint32(hdr[:0], crc.Sum32()))
			return err
		}(); err != nil {
			return errors.Wrapf(err, "raftstore: writing snapshot file %s", name)
		}
	}
	if err := bw.WriteByte(0); err != nil {
		return errors.Wrap(err, "raftstore: writing snapshot")
	}
	return errors.Wrap(bw.Flush(), "raftstore: writing snapshot")
}

// countingReader tracks the archive offset for error messages.
type countingReader struct {
	r   *bufio.Reader
	off int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.off += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.off++
	}
	return b, err
}

// readArchive unpacks an archive writeArchive made into dir (which must not
// exist), syncing every file and the directory.
func readArchive(r io.Reader, dir string) error {
	cr := &countingReader{r: bufio.NewReaderSize(r, 1<<16)}
	corrupt := func(format string, args ...interface{}) error {
		return errors.Wrapf(db.ErrCorruption, "raftstore: snapshot archive at offset %d: %s",
			cr.off, fmt.Sprintf(format, args...))
	}
	magic := make([]byte, len(archiveMagic))
	if _, err := io.ReadFull(cr, magic); err != nil || string(magic) != archiveMagic {
		return corrupt("not a Strata snapshot archive")
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return errors.Wrap(err, "raftstore: restore")
	}
	for {
		nameLen, err := binary.ReadUvarint(cr)
		if err != nil {
			return corrupt("reading a file name length: %v", err)
		}
		if nameLen == 0 {
			break
		}
		if nameLen > 255 {
			return corrupt("file name of %d bytes", nameLen)
		}
		nb := make([]byte, nameLen)
		if _, err := io.ReadFull(cr, nb); err != nil {
			return corrupt("reading a file name: %v", err)
		}
		name := string(nb)
		if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return corrupt("bad file name %q", name)
		}
		size, err := binary.ReadUvarint(cr)
		if err != nil {
			return corrupt("reading the size of %s: %v", name, err)
		}
		if size > 1<<62 {
			return corrupt("size %d of %s", size, name)
		}
		fh, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return errors.Wrapf(err, "raftstore: restore")
		}
		crc := crc32.New(castagnoli)
		_, err = io.CopyN(io.MultiWriter(fh, crc), cr, int64(size))
		if err != nil {
			fh.Close()
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return corrupt("%s is truncated", name)
			}
			return errors.Wrapf(err, "raftstore: restoring %s", name)
		}
		err = fh.Sync()
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return errors.Wrapf(err, "raftstore: restoring %s", name)
		}
		var sum [4]byte
		if _, err := io.ReadFull(cr, sum[:]); err != nil {
			return corrupt("reading the checksum of %s: %v", name, err)
		}
		if binary.BigEndian.Uint32(sum[:]) != crc.Sum32() {
			return corrupt("checksum mismatch in %s", name)
		}
	}
	return errors.Wrap(syncDir(dir), "raftstore: restore")
}
