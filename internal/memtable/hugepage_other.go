//go:build !linux

package memtable

func adviseHugePages([]byte) {}
