package table

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestBlockIter_DamagedBothWays damages blocks past their checksum (as a
// table written without checksums would be) and walks them both ways: when
// neither walk flags corruption, the backward walk (last, prev, which jumps
// through restart points) must be exactly the reverse of the forward walk
// (first, next, which decodes entry after entry). Damage to entries can go
// unnoticed; a backward walk that silently skips or invents entries must
// not.
func TestBlockIter_DamagedBothWays(t *testing.T) {
	rng := rand.New(rand.NewSource(testutil.Seed(t)))
	n := 300
	if testutil.Long() {
		n = 20000
	}
	diverged, corrupt := 0, 0
	for trial := 0; trial < n; trial++ {
		bw := blockWriter{restartInterval: 1 + rng.Intn(16)}
		for i := 0; i < 40; i++ {
			k := base.MakeInternalKey([]byte(fmt.Sprintf("key%04d", i*3)), base.SeqNum(i+1), base.KindSet)
			bw.add(k.Append(nil), []byte(fmt.Sprintf("value%d", i)))
		}
		b := bytes.Clone(bw.finish())
		switch rng.Intn(3) {
		case 0:
			b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
		case 1:
			off := rng.Intn(len(b))
			clear(b[off:min(len(b), off+1+rng.Intn(16))])
		default:
			// The restart array and footer.
			off := len(b) - 1 - rng.Intn(4*(len(bw.restarts)+1))
			b[off] ^= byte(1 + rng.Intn(255))
		}
		var it blockIter
		if !it.init(b, base.CompareEncoded) {
			corrupt++
			continue
		}
		var fwd, bwd []string
		for ok := it.first(); ok && len(fwd) < 1000; ok = it.next() {
			fwd = append(fwd, string(it.key)+"="+string(it.value()))
		}
		fc := it.corrupt
		for ok := it.last(); ok && len(bwd) < 1000; ok = it.prev() {
			bwd = append(bwd, string(it.key)+"="+string(it.value()))
		}
		bc := it.corrupt
		if fc || bc {
			corrupt++
			continue
		}
		for i, j := 0, len(bwd)-1; i < j; i, j = i+1, j-1 {
			bwd[i], bwd[j] = bwd[j], bwd[i]
		}
		if !equalStrings(fwd, bwd) {
			diverged++
		}
	}
	t.Logf("%d damaged blocks: %d flagged corrupt, %d walks diverged silently", n, corrupt, diverged)
	require.Zero(t, diverged)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
