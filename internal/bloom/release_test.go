package bloom

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// A released builder's buffer serves the next builder, which starts empty
// and writes the same filter as a fresh one; the filter the released
// builder returned does not change.
func TestBuilderReleaseReuse(t *testing.T) {
	for _, f := range []Format{FastLocal, Legacy} {
		b := NewBuilder(10, f)
		for i := range 1000 {
			b.AddKey(dbBenchKey(uint64(i)))
		}
		first := b.Finish()
		kept := bytes.Clone(first)
		b.Release()
		require.Zero(t, b.NumEntries())

		b2 := NewBuilder(10, f)
		require.Zero(t, b2.NumEntries(), "a builder over a released buffer starts empty")
		fresh := &Builder{format: b2.format, bitsPerKey: b2.bitsPerKey}
		for i := 5000; i < 5100; i++ {
			b2.AddKey(dbBenchKey(uint64(i)))
			fresh.AddKey(dbBenchKey(uint64(i)))
		}
		require.Equal(t, fresh.Finish(), b2.Finish())
		require.Equal(t, kept, first, "Release changed a finished filter")
		for i := range 1000 {
			require.True(t, MayContain(first, dbBenchKey(uint64(i))))
		}
		b2.Release()
	}
}
