package stress

import (
	"encoding/binary"
	"io"
	"os"
	"sync"

	"github.com/cockroachdb/errors"
)

// KeyState is the oracle's knowledge of one key. Every write to a key (put
// or delete) gets the next version of that key, so a key's history is the
// sequence of versions 1, 2, ... and a read value names the version that
// wrote it.
//
//   - The key's state is one of the versions in [Lo, Hi]. Normally Lo == Hi,
//     the last acknowledged write. A write that failed (an injected I/O
//     error) or was in flight at a crash may or may not have been applied:
//     it raises Hi and leaves Lo, until the next acknowledged write.
//   - Version 0 is "never written", a delete.
//   - LastDel is the highest version, started or done, that is a delete: the
//     key may read as absent exactly when some delete version is >= Lo.
//   - Pending is the version of the write in flight (0 if none), Next the
//     highest version handed out.
type KeyState struct {
	Lo, Hi, LastDel, Pending, Next uint32
}

// MayBeAbsent reports whether a read may find no value, given the state
// before the read (pre) and after it (post).
func MayBeAbsent(pre, post KeyState) bool { return post.LastDel >= pre.Lo }

// CheckRead checks what a read of key index i returned (found, and value if
// found), given the oracle's state of the key just before the read started
// (pre) and just after it returned (post). When no write to the key raced
// with the read, pre == post and the check is exact.
func CheckRead(i int, pre, post KeyState, found bool, value []byte, mult int) error {
	if !found {
		if MayBeAbsent(pre, post) {
			return nil
		}
		return errors.Newf("key %s: not found, expected version %s", Key(i), expectDesc(pre, post))
	}
	v, err := DecodeValue(i, value, mult)
	if err != nil {
		return errors.Wrapf(err, "key %s: bad value %q", Key(i), truncate(value))
	}
	if v < pre.Lo || v > post.Next || v == 0 {
		return errors.Newf("key %s: read version %d, expected %s", Key(i), v, expectDesc(pre, post))
	}
	return nil
}

func expectDesc(pre, post KeyState) string {
	s := ""
	if pre.Lo == post.Next {
		s = formatU(pre.Lo)
	} else {
		s = "[" + formatU(pre.Lo) + ".." + formatU(post.Next) + "]"
	}
	if MayBeAbsent(pre, post) {
		s += " or absent"
	} else {
		s += " (present)"
	}
	return s
}

func formatU(v uint32) string { return itoa(v) }

func itoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

func truncate(b []byte) []byte {
	if len(b) > 24 {
		return b[:24]
	}
	return b
}

// Oracle is the expected state of a key space of N keys. Writers lock the
// keys they write (LockKeys, in ascending order, so no deadlock), call
// Begin, do the write, then Commit or Fail, then unlock: each key is written
// by one thread at a time, so the oracle is exact. Readers take no key locks:
// they read State before and after their read and check with CheckRead.
type Oracle struct {
	keyLocks []sync.Mutex
	mu       []sync.Mutex // guards states, striped
	states   []KeyState

	logMu sync.Mutex
	log   *os.File // nil: not persisted
	opID  uint32
}

const oracleStripes = 64

// NewOracle returns an oracle of n keys, all never written.
func NewOracle(n int) *Oracle {
	return &Oracle{keyLocks: make([]sync.Mutex, n), mu: make([]sync.Mutex, oracleStripes), states: make([]KeyState, n)}
}

// N is the number of keys.
func (o *Oracle) N() int { return len(o.states) }

// LockKeys locks the write locks of keys, which must be sorted and distinct.
func (o *Oracle) LockKeys(keys []int) {
	for _, k := range keys {
		o.keyLocks[k].Lock()
	}
}

// UnlockKeys undoes LockKeys.
func (o *Oracle) UnlockKeys(keys []int) {
	for _, k := range keys {
		o.keyLocks[k].Unlock()
	}
}

// State returns the state of key i.
func (o *Oracle) State(i int) KeyState {
	m := &o.mu[i%oracleStripes]
	m.Lock()
	s := o.states[i]
	m.Unlock()
	return s
}

// States returns the states of keys [lo, hi).
func (o *Oracle) States(lo, hi int) []KeyState {
	out := make([]KeyState, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, o.State(i))
	}
	return out
}

// Write is one key of a write operation: a put or a delete.
type Write struct {
	Key     int
	Del     bool
	Version uint32 // set by Begin
}

// Begin marks the writes pending, giving each its version, and logs the
// intent when the oracle is persisted. The caller holds the keys' locks.
// It returns the operation's id for Commit/Fail.
func (o *Oracle) Begin(ws []Write) (uint32, error) {
	for j := range ws {
		w := &ws[j]
		m := &o.mu[w.Key%oracleStripes]
		m.Lock()
		s := &o.states[w.Key]
		s.Next++
		w.Version = s.Next
		s.Pending = s.Next
		if w.Del {
			s.LastDel = s.Next
		}
		m.Unlock()
	}
	if o.log == nil {
		return 0, nil
	}
	o.logMu.Lock()
	defer o.logMu.Unlock()
	o.opID++
	buf := make([]byte, 0, len(ws)*recordLen)
	for _, w := range ws {
		buf = appendRecord(buf, record{kind: recIntent, del: w.Del, key: uint32(w.Key), a: w.Version, b: o.opID})
	}
	_, err := o.log.Write(buf)
	return o.opID, err
}

// Commit records that the writes were acknowledged.
func (o *Oracle) Commit(op uint32, ws []Write) error {
	if err := o.logDone(recAck, op); err != nil {
		return err
	}
	for _, w := range ws {
		m := &o.mu[w.Key%oracleStripes]
		m.Lock()
		s := &o.states[w.Key]
		s.Lo, s.Hi, s.Pending = w.Version, w.Version, 0
		m.Unlock()
	}
	return nil
}

// Fail records that the writes returned an error: each may or may not have
// been applied.
func (o *Oracle) Fail(op uint32, ws []Write) error {
	if err := o.logDone(recFail, op); err != nil {
		return err
	}
	for _, w := range ws {
		m := &o.mu[w.Key%oracleStripes]
		m.Lock()
		s := &o.states[w.Key]
		s.Hi, s.Pending = w.Version, 0
		m.Unlock()
	}
	return nil
}

func (o *Oracle) logDone(kind byte, op uint32) error {
	if o.log == nil {
		return nil
	}
	o.logMu.Lock()
	defer o.logMu.Unlock()
	_, err := o.log.Write(appendRecord(nil, record{kind: kind, b: op}))
	return err
}

// Resolve sets key i's state after a verification read: found at version v,
// or absent. The window collapses to what was read.
func (o *Oracle) Resolve(i int, found bool, v uint32) {
	m := &o.mu[i%oracleStripes]
	m.Lock()
	s := &o.states[i]
	if found {
		s.Lo, s.Hi = v, v
	} else {
		s.Lo, s.Hi = s.LastDel, s.LastDel
	}
	s.Pending = 0
	m.Unlock()
}

// Expected-state log records: fixed 24 bytes, written with one write(2)
// per operation step, so a SIGKILL leaves whole records (a torn last
// record, if any, is ignored).
const recordLen = 24

const (
	recIntent     byte = 'I' // key, a=version, b=op, del
	recAck        byte = 'A' // b=op
	recFail       byte = 'F' // b=op
	recCheckpoint byte = 'S' // key, a=Lo, b=Hi, c=LastDel, d=Next
)

type record struct {
	kind       byte
	del        bool
	key        uint32
	a, b, c, d uint32
}

func appendRecord(buf []byte, r record) []byte {
	var b [recordLen]byte
	b[0] = r.kind
	if r.del {
		b[1] = 1
	}
	binary.LittleEndian.PutUint32(b[4:], r.key)
	binary.LittleEndian.PutUint32(b[8:], r.a)
	binary.LittleEndian.PutUint32(b[12:], r.b)
	binary.LittleEndian.PutUint32(b[16:], r.c)
	binary.LittleEndian.PutUint32(b[20:], r.d)
	return append(buf, b[:]...)
}

// InFlight is a write operation that had begun but was neither acknowledged
// nor failed when the log ends: the process died during it.
type InFlight struct {
	Op     uint32
	Writes []Write
	Prev   []KeyState // the keys' states before the operation
}

// LoadOracle rebuilds an oracle of n keys from the log at path (a missing
// file is an empty log). Writes in flight at the end of the log are treated
// as failed (each may or may not be applied) and returned, so the caller
// can check that each was applied entirely or not at all.
func LoadOracle(path string, n int) (*Oracle, []InFlight, error) {
	o := NewOracle(n)
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, errors.Wrapf(err, "expected-state log %s", path)
	}
	pending := map[uint32]*InFlight{}
	var order []uint32
	for off := 0; off+recordLen <= len(data); off += recordLen {
		b := data[off : off+recordLen]
		r := record{kind: b[0], del: b[1] == 1, key: binary.LittleEndian.Uint32(b[4:]),
			a: binary.LittleEndian.Uint32(b[8:]), b: binary.LittleEndian.Uint32(b[12:]),
			c: binary.LittleEndian.Uint32(b[16:]), d: binary.LittleEndian.Uint32(b[20:])}
		if (r.kind == recIntent || r.kind == recCheckpoint) && int(r.key) >= n {
			return nil, nil, errors.Newf("expected-state log %s: offset %d: key %d outside -max_key %d", path, off, r.key, n)
		}
		switch r.kind {
		case recCheckpoint:
			o.states[r.key] = KeyState{Lo: r.a, Hi: r.b, LastDel: r.c, Next: r.d}
		case recIntent:
			f := pending[r.b]
			if f == nil {
				f = &InFlight{Op: r.b}
				pending[r.b] = f
				order = append(order, r.b)
			}
			s := &o.states[r.key]
			f.Prev = append(f.Prev, *s)
			f.Writes = append(f.Writes, Write{Key: int(r.key), Del: r.del, Version: r.a})
			s.Next, s.Pending = r.a, r.a
			if r.del {
				s.LastDel = r.a
			}
		case recAck, recFail:
			f := pending[r.b]
			if f == nil {
				return nil, nil, errors.Newf("expected-state log %s: offset %d: end of unknown op %d", path, off, r.b)
			}
			for _, w := range f.Writes {
				s := &o.states[w.Key]
				if r.kind == recAck {
					s.Lo = w.Version
				}
				s.Hi, s.Pending = w.Version, 0
			}
			delete(pending, r.b)
		default:
			return nil, nil, errors.Newf("expected-state log %s: offset %d: bad record kind %d", path, off, r.kind)
		}
	}
	var inflight []InFlight
	for _, op := range order {
		f := pending[op]
		if f == nil {
			continue
		}
		for _, w := range f.Writes {
			s := &o.states[w.Key]
			s.Hi, s.Pending = w.Version, 0
		}
		inflight = append(inflight, *f)
	}
	return o, inflight, nil
}

// Persist writes a checkpoint of the whole state to path (through a
// temporary file and a rename) and keeps it open to append every later
// write's intent and outcome.
func (o *Oracle) Persist(path string) error {
	var buf []byte
	for i := range o.states {
		s := o.State(i)
		buf = appendRecord(buf, record{kind: recCheckpoint, key: uint32(i), a: s.Lo, b: s.Hi, c: s.LastDel, d: s.Next})
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o644); err != nil {
		return errors.Wrap(err, "expected-state checkpoint")
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Wrap(err, "expected-state checkpoint")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return errors.Wrap(err, "expected-state log")
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return errors.Wrap(err, "expected-state log")
	}
	o.logMu.Lock()
	o.log = f
	o.opID = 0
	o.logMu.Unlock()
	return nil
}

// CloseLog stops persisting.
func (o *Oracle) CloseLog() error {
	o.logMu.Lock()
	defer o.logMu.Unlock()
	if o.log == nil {
		return nil
	}
	err := o.log.Close()
	o.log = nil
	return err
}
