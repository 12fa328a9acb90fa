package memtable

import "golang.org/x/sys/unix"

// adviseHugePages asks the kernel to back a large arena with transparent
// huge pages. A skiplist insert or lookup visits ~40 nodes scattered over
// the arena; with 4 KiB pages each visit is also a TLB miss. The advice is
// only a hint: when the kernel refuses (THP "never"), nothing changes.
func adviseHugePages(buf []byte) {
	const huge = 2 << 20
	if len(buf) < 2*huge {
		return
	}
	_ = unix.Madvise(buf, unix.MADV_HUGEPAGE)
}
