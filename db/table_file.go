package db

import (
	"bufio"
	"sync"

	"github.com/stratadb/strata/internal/vfs"
)

// tableWriteBuffer is how many bytes a table being written gathers before
// one write(2): a table writer emits one block (4 KiB by default) at a time,
// and a system call per block was a sixth of a flush's time.
const tableWriteBuffer = 256 << 10

var tableBufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, tableWriteBuffer) }}

// bufferedTableFile is a new table file whose writes are gathered in a
// pooled buffer. Sync and Close write the buffer out first, so what Sync
// makes durable is every byte written so far, as vfs.File promises.
type bufferedTableFile struct {
	vfs.File
	buf *bufio.Writer
}

func newBufferedTableFile(f vfs.File) *bufferedTableFile {
	b := tableBufPool.Get().(*bufio.Writer)
	b.Reset(f)
	return &bufferedTableFile{File: f, buf: b}
}

func (f *bufferedTableFile) Write(p []byte) (int, error) { return f.buf.Write(p) }

func (f *bufferedTableFile) Sync() error {
	if err := f.buf.Flush(); err != nil {
		return err
	}
	return f.File.Sync()
}

// Close writes out the buffer and closes the file. The buffer goes back to
// the pool whatever happens: after Close nothing writes through it.
func (f *bufferedTableFile) Close() error {
	var err error
	if b := f.buf; b != nil {
		err = b.Flush()
		b.Reset(nil)
		tableBufPool.Put(b)
		f.buf = nil
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
