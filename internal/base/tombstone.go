package base

import "fmt"

// Tombstone is a range deletion: it deletes every key k with
// Start <= k < End whose sequence number is below Seq, as seen by readers at
// sequence numbers >= Seq.
type Tombstone struct {
	Start, End []byte
	Seq        SeqNum
}

// Covers reports whether the tombstone deletes the version (key, seq) for a
// reader at snapshot sequence snap (exclusive upper bound: the reader sees
// sequence numbers < snap).
func (t Tombstone) Covers(key []byte, seq, snap SeqNum) bool {
	return t.Seq < snap && seq < t.Seq &&
		CompareUser(t.Start, key) <= 0 && CompareUser(key, t.End) < 0
}

func (t Tombstone) String() string { return fmt.Sprintf("[%q,%q)#%d", t.Start, t.End, t.Seq) }
