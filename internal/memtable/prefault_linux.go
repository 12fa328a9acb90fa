package memtable

import "golang.org/x/sys/unix"

// canPopulate: MADV_POPULATE_WRITE exists since Linux 5.14; on an older
// kernel the first populate fails and the prefaulter gives up.
const canPopulate = true

// populate faults b's pages in for writing, as stores into them would.
func populate(b []byte) error {
	return unix.Madvise(b, unix.MADV_POPULATE_WRITE)
}
