package table

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// nextKVModel is a sorted model whose keys share long prefixes (runs of
// prefix-compressed keys rebuilt in place), with some keys past 127
// unshared bytes and values of every varint width (1, 2 and 3 bytes), so
// that the inline header decoding and each of its fallbacks are taken.
func nextKVModel(rng *rand.Rand, n int) []kv {
	seen := map[string]bool{}
	var out []kv
	for len(out) < n {
		var k string
		switch r := rng.Intn(10); {
		case r == 0:
			k = fmt.Sprintf("long/%s/%04d", strings.Repeat("x", 130+rng.Intn(100)), rng.Intn(1000))
		case r < 4:
			k = fmt.Sprintf("range/%08d", rng.Intn(5000))
		default:
			k = fmt.Sprintf("range/%08d/sub%d", rng.Intn(5000), rng.Intn(30))
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		var vlen int
		switch r := rng.Intn(20); {
		case r == 0:
			vlen = 16384 + rng.Intn(2000) // three-byte value length
		case r < 6:
			vlen = 128 + rng.Intn(400) // two bytes
		default:
			vlen = rng.Intn(128)
		}
		v := make([]byte, vlen)
		for i := range v {
			v[i] = byte('a' + rng.Intn(26))
		}
		out = append(out, kv{base.MakeInternalKey([]byte(k), base.SeqNum(len(out)+1), base.KindSet), v})
	}
	sort.Slice(out, func(i, j int) bool { return base.InternalCompare(out[i].key, out[j].key) < 0 })
	return out
}

// entryString is the entry an iterator is at, or "-" when it is not.
func entryString(ok bool, k base.InternalKey, v []byte) string {
	if !ok {
		return "-"
	}
	return k.String() + "=" + string(v)
}

// TestIter_NextKVMatchesNext walks two iterators over the same table with
// the same random moves, one stepping forward through NextKV (the data
// block's inline entry decoding), the other through Next, Key and Value:
// every move must leave them at the same entry, and each full forward walk
// must be the model. The moves mix Prev after Next, seeks after
// exhaustion and walks across block boundaries.
func TestIter_NextKVMatchesNext(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	rounds := 12
	if testutil.Long() {
		rounds = 200
	}
	for round := 0; round < rounds; round++ {
		model := nextKVModel(rng, 50+rng.Intn(400))
		opts := WriterOptions{
			BlockSize:            256 << rng.Intn(5),
			BlockRestartInterval: 1 + rng.Intn(16),
			FormatVersion:        []uint32{2, 5}[rng.Intn(2)],
		}
		if rng.Intn(2) == 0 {
			opts.Compression = SnappyCompression
		}
		f, _ := buildTable(t, model, nil, opts)
		r := openMem(t, f, nil)
		fast, slow := r.NewIter(), r.NewIter()
		randKey := func() []byte {
			if rng.Intn(4) == 0 {
				return []byte(fmt.Sprintf("range/%08d", rng.Intn(5200)))
			}
			return append([]byte(nil), model[rng.Intn(len(model))].key.UserKey...)
		}
		// A full walk with NextKV from First is the model.
		var got []string
		ok := fast.First()
		for k, v := fast.Key(), fast.Value(); ok; k, v, ok = fast.NextKV() {
			got = append(got, entryString(true, k, v))
		}
		require.NoError(t, fast.Error())
		want := make([]string, len(model))
		for i, e := range model {
			want[i] = entryString(true, e.key, e.val)
		}
		require.Equal(t, want, got, "round %d %+v: NextKV walk", round, opts)
		fastOK, slowOK := false, false
		for op := 0; op < 400; op++ {
			var what string
			switch r := rng.Intn(10); {
			case r < 5:
				what = "next"
				var k base.InternalKey
				var v []byte
				k, v, fastOK = fast.NextKV()
				if fastOK {
					// What NextKV returned is what Key and Value say.
					require.Equal(t, entryString(true, fast.Key(), fast.Value()), entryString(true, k, v))
				}
				slowOK = slow.Next()
			case r == 5:
				what = "prev"
				fastOK, slowOK = fast.Prev(), slow.Prev()
			case r == 6:
				k := randKey()
				what = "seekGE " + string(k)
				fastOK, slowOK = fast.SeekGE(k), slow.SeekGE(k)
			case r == 7:
				k := randKey()
				what = "seekLT " + string(k)
				fastOK, slowOK = fast.SeekLT(k), slow.SeekLT(k)
			case r == 8:
				what = "first"
				fastOK, slowOK = fast.First(), slow.First()
			default:
				what = "last"
				fastOK, slowOK = fast.Last(), slow.Last()
			}
			require.Equal(t, slowOK, fastOK, "round %d op %d %s", round, op, what)
			var fk, sk base.InternalKey
			var fv, sv []byte
			if fastOK {
				fk, fv, sk, sv = fast.Key(), fast.Value(), slow.Key(), slow.Value()
			}
			require.Equal(t, entryString(slowOK, sk, sv), entryString(fastOK, fk, fv), "round %d op %d %s", round, op, what)
			require.NoError(t, fast.Error())
			require.NoError(t, slow.Error())
			if !fastOK && rng.Intn(2) == 0 {
				// Seek after exhaustion: the walk from there is the model's.
				k := randKey()
				i := sort.Search(len(model), func(i int) bool { return bytes.Compare(model[i].key.UserKey, k) >= 0 })
				ok := fast.SeekGE(k)
				for j := i; j < min(len(model), i+20); j++ {
					require.True(t, ok, "round %d: entry %d after SeekGE(%q) past exhaustion", round, j, k)
					require.Equal(t, want[j], entryString(true, fast.Key(), fast.Value()))
					_, _, ok = fast.NextKV()
				}
				slowOK = slow.SeekGE(k)
				for j := i; j < min(len(model), i+20); j++ {
					slowOK = slow.Next()
				}
				require.Equal(t, slowOK, ok)
				fastOK = ok
			}
		}
		require.NoError(t, fast.Close())
		require.NoError(t, slow.Close())
		require.NoError(t, r.Close())
	}
}

// TestBlockIter_NextDataMatchesNext: on random blocks, intact and damaged
// (the checksum, which would catch the damage, is not involved here), the
// data block's inline step (nextData) and the generic one (next, through
// decodeAt) yield the same entries and flag corruption at the same entry.
func TestBlockIter_NextDataMatchesNext(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	n := 2000
	if testutil.Long() {
		n = 50000
	}
	for trial := 0; trial < n; trial++ {
		model := nextKVModel(rng, 1+rng.Intn(40))
		bw := blockWriter{restartInterval: 1 + rng.Intn(16)}
		for _, e := range model {
			bw.add(e.key.Append(nil), e.val)
		}
		b := bytes.Clone(bw.finish())
		if trial%4 != 0 {
			for d := 1 + rng.Intn(3); d > 0; d-- {
				b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
			}
		}
		var fast, slow blockIter
		fi, si := fast.init(b, base.CompareEncoded), slow.init(b, base.CompareEncoded)
		require.Equal(t, si, fi)
		if !fi {
			continue
		}
		fast.setMode(cmpInternal)
		slow.setMode(cmpInternal)
		fok, sok := fast.first(), slow.first()
		for steps := 0; ; steps++ {
			require.Equal(t, sok, fok, "trial %d step %d", trial, steps)
			require.Equal(t, slow.corrupt, fast.corrupt, "trial %d step %d", trial, steps)
			if !fok || steps > 1000 {
				break
			}
			require.Equal(t, string(slow.key), string(fast.key), "trial %d step %d", trial, steps)
			require.Equal(t, string(slow.value()), string(fast.value()), "trial %d step %d", trial, steps)
			if rng.Intn(8) == 0 {
				// A step back re-decodes from a restart point: the
				// inline steps after it rebuild keys from that key.
				fok, sok = fast.prev(), slow.prev()
				continue
			}
			fok, sok = fast.nextData(), slow.next()
		}
		if trial%4 == 0 {
			require.False(t, fast.corrupt, "trial %d: intact block", trial)
		}
	}
}

// TestIter_NextKVDamagedBlock: a table written without checksums whose
// second data block has an entry claiming more shared key bytes than the
// previous key has. The forward walk through NextKV yields the entries
// before it, then stops with ErrCorruption naming the file and the
// block's offset, as the walk through Next does.
func TestIter_NextKVDamagedBlock(t *testing.T) {
	var model []kv
	for i := 0; i < 400; i++ {
		model = append(model, kv{base.MakeInternalKey([]byte(fmt.Sprintf("range/%08d", i)), base.SeqNum(i+1), base.KindSet),
			[]byte(fmt.Sprintf("value-%03d", i))})
	}
	f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 512, BlockRestartInterval: 16, FormatVersion: 5, NoChecksum: true})
	r, err := Open(f, int64(len(f.b)), ReaderOptions{FileName: "dmg.sst"})
	require.NoError(t, err)
	_, handles := indexEntries(t, r)
	require.NoError(t, r.Close())
	require.Greater(t, len(handles), 2)
	// The second entry of the second block: its first header byte is the
	// shared length.
	blk := f.b[handles[1].offset : handles[1].offset+handles[1].size]
	var bi blockIter
	require.True(t, bi.init(blk, base.CompareEncoded))
	require.True(t, bi.first())
	firstKey := string(bi.key)
	second := bi.nextOffset
	damaged := bytes.Clone(f.b)
	damaged[int(handles[1].offset)+second] = 0x7f // shared 127 > len(first key)
	// Entries before the damage: the whole first block and the second
	// block's first entry.
	var before int
	for before = 0; string(model[before].key.Append(nil)) != firstKey; before++ {
	}
	before++

	for _, path := range []string{"NextKV", "Next"} {
		r, err := Open(&memFile{b: damaged}, int64(len(damaged)), ReaderOptions{FileName: "dmg.sst"})
		require.NoError(t, err)
		it := r.NewIter()
		var got int
		ok := it.First()
		for ; ok; got++ {
			require.Equal(t, model[got].key, it.Key(), path)
			require.Equal(t, string(model[got].val), string(it.Value()), path)
			if path == "NextKV" {
				_, _, ok = it.NextKV()
			} else {
				ok = it.Next()
			}
		}
		require.Equal(t, before, got, "%s: entries before the damaged one", path)
		err = it.Error()
		require.Error(t, err, path)
		require.True(t, errors.Is(err, base.ErrCorruption), "%s: %v", path, err)
		require.Contains(t, err.Error(), "dmg.sst", path)
		require.Contains(t, err.Error(), fmt.Sprintf("offset %d", handles[1].offset), path)
		_, _, ok = it.NextKV()
		require.False(t, ok, "%s: a step after the error", path)
		require.Error(t, it.Close())
		require.NoError(t, r.Close())
	}
}
