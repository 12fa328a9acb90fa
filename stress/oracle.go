package stress

import (
	"encoding/binary"
	"io"
	"os"
	"sync"
	"sync/atomic"

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
	// hist[i][j] describes version histBase[i]+1+j of key i: its kind
	// (histPut...) and histAcked once acknowledged (or seen applied).
	// Merged values are checked against it; guarded by the stripe locks.
	hist     [][]byte
	histBase []uint32
	// histTime[i][j] is the clock (unix seconds) when version
	// histBase[i]+1+j of key i began: with TTL, the write time the DB
	// stamped on it, as the clock only moves with no operation running.
	histTime [][]uint32

	// clock is the time the DB reads under TTL (Options.Clock), unix
	// seconds; rules are the run's filter and TTL (see filter.go).
	clock atomic.Int64
	rules Rules

	logMu sync.Mutex
	log   *os.File // nil: not persisted
	opID  uint32
}

const oracleStripes = 64

// NewOracle returns an oracle of n keys, all never written.
func NewOracle(n int) *Oracle {
	return &Oracle{keyLocks: make([]sync.Mutex, n), mu: make([]sync.Mutex, oracleStripes), states: make([]KeyState, n),
		hist: make([][]byte, n), histBase: make([]uint32, n), histTime: make([][]uint32, n)}
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

// Write is one key of a write operation: a put, a delete (Del), a single
// delete (Del and Single) or a merge (Merge).
type Write struct {
	Key     int
	Del     bool
	Merge   bool
	Single  bool
	Version uint32 // set by Begin
}

// History entry kinds.
const (
	histPut       byte = 0
	histDel       byte = 1
	histMerge     byte = 2
	histSingleDel byte = 3
	histKindMask  byte = 3
	histAcked     byte = 0x10
)

func (w Write) histKind() byte {
	switch {
	case w.Del && w.Single:
		return histSingleDel
	case w.Del:
		return histDel
	case w.Merge:
		return histMerge
	}
	return histPut
}

// flags encodes the kind in an intent record's flag byte.
func (w Write) flags() byte { return w.histKind() + 1 }

func writeFromFlags(key int, f byte, v uint32) Write {
	w := Write{Key: key, Version: v}
	switch f - 1 {
	case histDel:
		w.Del = true
	case histSingleDel:
		w.Del, w.Single = true, true
	case histMerge:
		w.Merge = true
	}
	return w
}

// histAt returns the history entry of version v of key i (stripe lock
// held); ok false if v is 0 or pruned.
func (o *Oracle) histAt(i int, v uint32) (e byte, ok bool) {
	b := o.histBase[i]
	if v <= b || int(v-b) > len(o.hist[i]) {
		return 0, false
	}
	return o.hist[i][v-b-1], true
}

// setHist appends version v's entry, begun at time tm, to key i's history
// (stripe lock held).
func (o *Oracle) setHist(i int, v uint32, e byte, tm uint32) {
	b := o.histBase[i]
	if len(o.hist[i]) == 0 && b == 0 && v > 1 {
		b = v - 1
		o.histBase[i] = b
	}
	for uint32(len(o.hist[i]))+b < v-1 {
		o.hist[i] = append(o.hist[i], histPut) // a gap: unknown, unacknowledged
		o.histTime[i] = append(o.histTime[i], 0)
	}
	if uint32(len(o.hist[i]))+b == v-1 {
		o.hist[i] = append(o.hist[i], e)
		o.histTime[i] = append(o.histTime[i], tm)
	} else if v > b {
		o.hist[i][v-b-1] = e
		o.histTime[i][v-b-1] = tm
	}
}

func (o *Oracle) ackHist(i int, v uint32) {
	if e, ok := o.histAt(i, v); ok {
		o.hist[i][v-o.histBase[i]-1] = e | histAcked
	}
}

// prune drops key i's history below its newest acknowledged put or delete,
// which no read can go past. Only with no operation running.
func (o *Oracle) prune(i int) {
	h := o.hist[i]
	for j := len(h) - 1; j >= 0; j-- {
		if h[j]&histAcked != 0 && h[j]&histKindMask != histMerge {
			// Keep the entry before it too (single deletes look at it).
			if j > 0 {
				j--
			}
			o.hist[i] = append([]byte(nil), h[j:]...)
			o.histTime[i] = append([]uint32(nil), o.histTime[i][j:]...)
			o.histBase[i] += uint32(j)
			return
		}
	}
}

// SingleDeleteOK reports whether a single delete of key i is defined: the
// key's last write is an acknowledged put and the write before it an
// acknowledged delete (or none). The caller holds the key's lock.
func (o *Oracle) SingleDeleteOK(i int) bool {
	m := &o.mu[i%oracleStripes]
	m.Lock()
	defer m.Unlock()
	s := o.states[i]
	if s.Lo != s.Hi || s.Lo != s.Next || s.Lo == 0 {
		return false
	}
	e, ok := o.histAt(i, s.Lo)
	if !ok || e != histPut|histAcked {
		return false
	}
	if s.Lo == 1 {
		return true
	}
	p, ok := o.histAt(i, s.Lo-1)
	return ok && p&histAcked != 0 && (p&histKindMask == histDel || p&histKindMask == histSingleDel)
}

// CheckMerged checks a read of key i that found value, where values may be
// merged (a put's value or nothing, then merge operands): as CheckRead for
// the newest version in it, and against the key's history: every other
// version in it is a merge, the oldest a put or a merge onto nothing, and
// no acknowledged write between them is missing.
func (o *Oracle) CheckMerged(i int, pre, post KeyState, value []byte, mult int) error {
	vs, err := DecodeValues(i, value, mult)
	if err != nil {
		return errors.Wrapf(err, "key %s: bad value %q", Key(i), truncate(value))
	}
	last := vs[len(vs)-1]
	if last < pre.Lo || last > post.Next {
		return errors.Newf("key %s: read version %d (versions %v), expected %s", Key(i), last, vs, expectDesc(pre, post))
	}
	m := &o.mu[i%oracleStripes]
	m.Lock()
	defer m.Unlock()
	in := map[uint32]bool{}
	for j, v := range vs {
		in[v] = true
		e, ok := o.histAt(i, v)
		if !ok {
			return errors.Newf("key %s: read versions %v: version %d is older than an acknowledged overwrite (history from %d)", Key(i), vs, v, o.histBase[i]+1)
		}
		k := e & histKindMask
		if (j > 0 && k != histMerge) || (j == 0 && k != histMerge && k != histPut) {
			return errors.Newf("key %s: read versions %v: version %d has kind %d", Key(i), vs, v, k)
		}
	}
	for v := vs[0] + 1; v < last; v++ {
		e, _ := o.histAt(i, v)
		if in[v] || e&histAcked == 0 {
			continue
		}
		if e&histKindMask == histMerge {
			return errors.Newf("key %s: read versions %v: acknowledged merge %d is missing", Key(i), vs, v)
		}
		return errors.Newf("key %s: read versions %v: acknowledged overwrite %d (kind %d) is ignored", Key(i), vs, v, e&histKindMask)
	}
	if e, _ := o.histAt(i, vs[0]); e&histKindMask == histMerge {
		// A merge onto nothing: the newest applied write before it must be
		// a delete (or none), with no acknowledged merge in between.
		for v := vs[0] - 1; v > o.histBase[i]; v-- {
			e, _ := o.histAt(i, v)
			k := e & histKindMask
			if e&histAcked == 0 {
				if k == histDel || k == histSingleDel || k == histPut {
					break // may or may not be applied: cannot tell more
				}
				continue
			}
			if k == histDel || k == histSingleDel {
				break
			}
			return errors.Newf("key %s: read versions %v: merged onto nothing, but acknowledged write %d (kind %d) is below", Key(i), vs, v, k)
		}
	}
	return nil
}

// Begin marks the writes pending, giving each its version, and logs the
// intent when the oracle is persisted. The caller holds the keys' locks.
// It returns the operation's id for Commit/Fail.
func (o *Oracle) Begin(ws []Write) (uint32, error) {
	now := uint32(o.clock.Load())
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
		o.setHist(w.Key, w.Version, w.histKind(), now)
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
		buf = appendRecord(buf, record{kind: recIntent, flags: w.flags(), key: uint32(w.Key), a: w.Version, b: o.opID, c: now})
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
		o.ackHist(w.Key, w.Version)
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
		o.ackHist(i, v)
	} else {
		s.Lo, s.Hi = s.LastDel, s.LastDel
	}
	// Writes after what was read were not applied (lost with DisableWAL,
	// or in flight at a crash): their acknowledgement no longer counts.
	for u := s.Lo + 1; u <= s.Next; u++ {
		if e, ok := o.histAt(i, u); ok {
			o.hist[i][u-o.histBase[i]-1] = e &^ histAcked
		}
	}
	s.Pending = 0
	m.Unlock()
}

// Expected-state log records: fixed 24 bytes, written with one write(2)
// per operation step, so a SIGKILL leaves whole records (a torn last
// record, if any, is ignored).
const recordLen = 24

const (
	recIntent     byte = 'I' // key, a=version, b=op, c=clock
	recClock      byte = 'T' // a=clock (TTL runs: the clock moved)
	recAck        byte = 'A' // b=op
	recFail       byte = 'F' // b=op
	recCheckpoint byte = 'S' // key, a=Lo, b=Hi, c=LastDel, d=Next
	recHistory    byte = 'H' // key, a=version, flags=history entry, c=clock (after the key's 'S')
)

type record struct {
	kind       byte
	flags      byte // intent: Write.flags (1 put, 2 delete, 3 merge, 4 single delete)
	key        uint32
	a, b, c, d uint32
}

func appendRecord(buf []byte, r record) []byte {
	var b [recordLen]byte
	b[0] = r.kind
	b[1] = r.flags
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
		r := record{kind: b[0], flags: b[1], key: binary.LittleEndian.Uint32(b[4:]),
			a: binary.LittleEndian.Uint32(b[8:]), b: binary.LittleEndian.Uint32(b[12:]),
			c: binary.LittleEndian.Uint32(b[16:]), d: binary.LittleEndian.Uint32(b[20:])}
		if (r.kind == recIntent || r.kind == recCheckpoint || r.kind == recHistory) && int(r.key) >= n {
			return nil, nil, errors.Newf("expected-state log %s: offset %d: key %d outside -max_key %d", path, off, r.key, n)
		}
		switch r.kind {
		case recCheckpoint:
			o.states[r.key] = KeyState{Lo: r.a, Hi: r.b, LastDel: r.c, Next: r.d}
			o.hist[r.key], o.histTime[r.key], o.histBase[r.key] = nil, nil, r.d
		case recHistory:
			if len(o.hist[r.key]) == 0 {
				o.histBase[r.key] = r.a - 1
			}
			o.setHist(int(r.key), r.a, r.flags, r.c)
		case recIntent:
			f := pending[r.b]
			if f == nil {
				f = &InFlight{Op: r.b}
				pending[r.b] = f
				order = append(order, r.b)
			}
			s := &o.states[r.key]
			f.Prev = append(f.Prev, *s)
			if r.flags < 1 || r.flags > 4 {
				return nil, nil, errors.Newf("expected-state log %s: offset %d: bad write kind %d", path, off, r.flags)
			}
			w := writeFromFlags(int(r.key), r.flags, r.a)
			f.Writes = append(f.Writes, w)
			s.Next, s.Pending = r.a, r.a
			if w.Del {
				s.LastDel = r.a
			}
			o.setHist(w.Key, w.Version, w.histKind(), r.c)
			o.clock.Store(max(o.clock.Load(), int64(r.c)))
		case recClock:
			o.clock.Store(max(o.clock.Load(), int64(r.a)))
		case recAck, recFail:
			f := pending[r.b]
			if f == nil {
				return nil, nil, errors.Newf("expected-state log %s: offset %d: end of unknown op %d", path, off, r.b)
			}
			for _, w := range f.Writes {
				s := &o.states[w.Key]
				if r.kind == recAck {
					s.Lo = w.Version
					o.ackHist(w.Key, w.Version)
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
	buf := appendRecord(nil, record{kind: recClock, a: uint32(o.clock.Load())})
	for i := range o.states {
		m := &o.mu[i%oracleStripes]
		m.Lock()
		s := o.states[i]
		buf = appendRecord(buf, record{kind: recCheckpoint, key: uint32(i), a: s.Lo, b: s.Hi, c: s.LastDel, d: s.Next})
		o.prune(i)
		for j, e := range o.hist[i] {
			buf = appendRecord(buf, record{kind: recHistory, key: uint32(i), a: o.histBase[i] + 1 + uint32(j), flags: e, c: o.histTime[i][j]})
		}
		m.Unlock()
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

// HistoryString describes key i's history for failure messages: each
// version with its kind (p put, d delete, m merge, s single delete),
// upper case once acknowledged.
func (o *Oracle) HistoryString(i int) string {
	m := &o.mu[i%oracleStripes]
	m.Lock()
	defer m.Unlock()
	b := []byte("history from " + itoa(o.histBase[i]+1) + ":")
	h := o.hist[i]
	if len(h) > 40 {
		b = append(b, " ..."...)
		h = h[len(h)-40:]
	}
	for _, e := range h {
		c := "pdms"[e&histKindMask]
		if e&histAcked != 0 {
			c -= 'a' - 'A'
		}
		b = append(b, ' ', c)
	}
	return string(b)
}
