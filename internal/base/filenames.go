package base

import (
	"fmt"
	"strconv"
	"strings"
)

// FileKind is the kind of a file in a database directory.
type FileKind uint8

const (
	FileKindUnknown  FileKind = iota
	FileKindTable             // NNNNNN.sst (or .ldb)
	FileKindLog               // NNNNNN.log
	FileKindManifest          // MANIFEST-NNNNNN
	FileKindCurrent           // CURRENT
	FileKindLock              // LOCK
	FileKindOptions           // OPTIONS-NNNNNN
	FileKindTemp              // NNNNNN.dbtmp, OPTIONS-NNNNNN.dbtmp
	FileKindIdentity          // IDENTITY
	FileKindInfoLog           // LOG, LOG.old.*
	FileKindBlob              // NNNNNN.blob
)

// MakeFilename returns the name of a numbered file, as RocksDB names it.
func MakeFilename(kind FileKind, num uint64) string {
	switch kind {
	case FileKindTable:
		return fmt.Sprintf("%06d.sst", num)
	case FileKindLog:
		return fmt.Sprintf("%06d.log", num)
	case FileKindBlob:
		return fmt.Sprintf("%06d.blob", num)
	case FileKindManifest:
		return fmt.Sprintf("MANIFEST-%06d", num)
	case FileKindOptions:
		return fmt.Sprintf("OPTIONS-%06d", num)
	case FileKindTemp:
		return fmt.Sprintf("%06d.dbtmp", num)
	case FileKindCurrent:
		return "CURRENT"
	case FileKindLock:
		return "LOCK"
	case FileKindIdentity:
		return "IDENTITY"
	case FileKindInfoLog:
		return "LOG"
	}
	panic("strata: unknown file kind")
}

// ParseFilename parses a file name (no directory) once into its kind and
// number. ok is false for names the engine does not own.
func ParseFilename(name string) (kind FileKind, num uint64, ok bool) {
	switch {
	case name == "CURRENT":
		return FileKindCurrent, 0, true
	case name == "LOCK":
		return FileKindLock, 0, true
	case name == "IDENTITY":
		return FileKindIdentity, 0, true
	case name == "LOG" || strings.HasPrefix(name, "LOG.old."):
		return FileKindInfoLog, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, ok := parseNum(name[len("MANIFEST-"):])
		return FileKindManifest, n, ok
	case strings.HasPrefix(name, "OPTIONS-"):
		rest := name[len("OPTIONS-"):]
		if strings.HasSuffix(rest, ".dbtmp") {
			n, ok := parseNum(strings.TrimSuffix(rest, ".dbtmp"))
			return FileKindTemp, n, ok
		}
		n, ok := parseNum(rest)
		return FileKindOptions, n, ok
	}
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return FileKindUnknown, 0, false
	}
	n, ok := parseNum(name[:dot])
	if !ok {
		return FileKindUnknown, 0, false
	}
	switch name[dot+1:] {
	case "sst", "ldb":
		return FileKindTable, n, true
	case "log":
		return FileKindLog, n, true
	case "blob":
		return FileKindBlob, n, true
	case "dbtmp":
		return FileKindTemp, n, true
	}
	return FileKindUnknown, 0, false
}

func parseNum(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
