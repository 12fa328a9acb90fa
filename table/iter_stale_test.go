package table

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// failingFile fails reads at or after offset failFrom once armed.
type failingFile struct {
	*memFile
	armed    bool
	failFrom int64
}

func (f *failingFile) ReadAt(p []byte, off int64) (int, error) {
	if f.armed && off >= f.failFrom {
		return 0, errors.New("injected read error")
	}
	return f.memFile.ReadAt(p, off)
}

// TestIter_FailedBlockLoadLeavesNoStaleEntries: a seek whose data block
// fails to load returns false with the error, and a Next or Prev after it
// does not yield entries of the block the iterator was on before.
func TestIter_FailedBlockLoadLeavesNoStaleEntries(t *testing.T) {
	var model []kv
	for i := 0; i < 200; i++ {
		model = append(model, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), base.SeqNum(i+1), base.KindSet),
			[]byte(fmt.Sprintf("value-%03d", i))})
	}
	f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 256, BlockRestartInterval: 4, FormatVersion: 5})
	ff := &failingFile{memFile: f}
	r, err := Open(ff, int64(len(f.b)), ReaderOptions{FileName: "fail.sst"})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	_, handles := indexEntries(t, r)
	require.Greater(t, len(handles), 3)
	ff.failFrom = int64(handles[1].offset) // every data block but the first

	for _, move := range []string{"Next", "Prev"} {
		it := r.NewIter()
		ff.armed = false
		require.True(t, it.First())
		require.True(t, it.Next(), "positioned inside the first block")
		ff.armed = true
		require.False(t, it.SeekGE([]byte("k100")), "the seek's block fails to load")
		require.Error(t, it.Error())
		var ok bool
		if move == "Next" {
			ok = it.Next()
		} else {
			ok = it.Prev()
		}
		if ok {
			t.Fatalf("%s after a failed load yielded %s (stale entry from the previous block)", move, it.Key())
		}
		require.Error(t, it.Error(), "%s keeps the error", move)
		require.Error(t, it.Close(), "Close returns the error")
	}
}

// TestIter_StepAfterFalseSeek: a seek that finds nothing (past the end,
// before the start) leaves no position behind for Next or Prev to step
// from.
func TestIter_StepAfterFalseSeek(t *testing.T) {
	var model []kv
	for i := 0; i < 100; i++ {
		model = append(model, kv{base.MakeInternalKey([]byte(fmt.Sprintf("k%03d", i)), base.SeqNum(i+1), base.KindSet), nil})
	}
	for _, fv := range []uint32{2, 5} {
		f, _ := buildTable(t, model, nil, WriterOptions{BlockSize: 256, BlockRestartInterval: 4, FormatVersion: fv})
		r := openMem(t, f, nil)
		it := r.NewIter()
		for _, step := range []func() bool{it.Next, it.Prev} {
			require.True(t, it.SeekGE([]byte("k050")))
			require.False(t, it.SeekGE([]byte("z")), "past the end")
			if step() {
				t.Fatalf("fv%d: stepping after a SeekGE past the end yielded %s", fv, it.Key())
			}
			require.True(t, it.SeekGE([]byte("k050")))
			require.False(t, it.SeekLT([]byte("a")), "before the start")
			if step() {
				t.Fatalf("fv%d: stepping after a SeekLT before the start yielded %s", fv, it.Key())
			}
		}
		require.NoError(t, it.Close())
		require.NoError(t, r.Close())
	}
}
