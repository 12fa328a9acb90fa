package table

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// reverseKeys is a user comparer ordering keys in reverse bytewise order
// under its own name, with a Separator that counts its calls and returns a
// (correct, reverse-order) separator: a itself.
type reverseKeys struct{ separators *int }

func (reverseKeys) Name() string            { return "strata.test.Reverse" }
func (reverseKeys) Compare(a, b []byte) int { return bytes.Compare(b, a) }
func (r reverseKeys) Separator(dst, a, b []byte) []byte {
	*r.separators++
	return append(dst, a...)
}

// builtinReverse stands in for db.ReverseBytewiseComparer() (which the
// table package cannot import): a comparer that gives the engine's form.
type builtinReverse struct{}

func (builtinReverse) Name() string                   { return base.ReverseComparatorName }
func (builtinReverse) Compare(a, b []byte) int        { return base.ReverseComparer.Compare(a, b) }
func (builtinReverse) EngineComparer() *base.Comparer { return base.ReverseComparer }

// An external writer given a comparer checks the order of added keys and
// of range-deletion bounds with it, reports bounds in its order, records
// its name as the rocksdb.comparator property, and uses its Separator for
// index keys; the file reads back in that order.
func TestExternalWriterComparer(t *testing.T) {
	seps := 0
	for _, cmp := range []KeyComparer{builtinReverse{}, reverseKeys{&seps}} {
		t.Run(cmp.Name(), func(t *testing.T) {
			var buf bytes.Buffer
			w := NewExternalWriter(&buf, ExternalWriterOptions{Comparer: cmp, BlockSize: 128})
			var want []string
			for i := 299; i >= 0; i-- {
				k := fmt.Sprintf("k%04d", i)
				want = append(want, k)
				require.NoError(t, w.Put([]byte(k), []byte("v"+k)))
			}
			// Ascending is out of order in reverse.
			err := w.Put([]byte("k0001"), nil)
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, "out of order")
			// A range whose start is bytewise smaller is backwards.
			require.ErrorIs(t, w.DeleteRange([]byte("a"), []byte("b")), ErrInvalidArgument)
			require.NoError(t, w.DeleteRange([]byte("b"), []byte("a")))
			require.NoError(t, w.DeleteRange([]byte("zz"), []byte("z")))
			info, err := w.Finish()
			require.NoError(t, err)
			require.Equal(t, "k0299", string(info.Smallest))
			require.Equal(t, "k0000", string(info.Largest))
			require.Equal(t, "zz", string(info.SmallestRangeDel))
			require.Equal(t, "a", string(info.LargestRangeDel))

			data := buf.Bytes()
			// The reader takes the table's order from its property.
			r, err := Open(bytesFile{bytes.NewReader(data)}, int64(len(data)), ReaderOptions{FileName: "ext.sst",
				ComparerByName: func(name string) *Comparer { return base.FromKeyComparer(cmp) }})
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, cmp.Name(), r.Properties().ComparatorName)
			it := r.NewIter()
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key().UserKey))
			}
			require.NoError(t, it.Close())
			require.Equal(t, want, got)
			v, _, _, found, err := r.Get([]byte("k0123"), 1)
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, "vk0123", string(v))
		})
	}
	require.Positive(t, seps, "the user comparer's Separator shortens index keys")
}
