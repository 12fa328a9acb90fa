package tool

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/batch"
	"github.com/stratadb/strata/internal/record"
)

func init() {
	register("wal", "dump", "FILE [--print-value] [--header]", walDump)
}

// walDump prints one line per write batch of a WAL file, as ldb dump_wal:
//
//	SEQ,COUNT,BYTESIZE,OFFSET,OP(CF) : 0xKEY [: 0xVALUE] ...
//
// where OFFSET is the file offset of the record's first fragment, CF the
// record's column family id in decimal (0 for the plain forms and for a
// column-family form with id 0; ldb prints both alike) and each operation
// is followed by a space. --print-value adds the values of PUT
// and MERGE; DELETE_RANGE always prints both ends. Keys and values are
// always hex, as ldb's.
func walDump(t *T, c *cmdline) error {
	if err := c.need(1, "FILE"); err != nil {
		return err
	}
	path := c.args[0]
	f, err := os.Open(path)
	if err != nil {
		return errors.Wrapf(err, "strata: wal dump")
	}
	defer f.Close()
	name := filepath.Base(path)
	_, num, _ := base.ParseFilename(name)
	if c.header {
		h := "Sequence,Count,ByteSize,Physical Offset,Key(s)"
		if c.printValue {
			h += " : value "
		}
		fmt.Fprintln(c.out, h)
	}
	r := record.NewReader(f, num, name)
	var line strings.Builder
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errors.Wrapf(err, "strata: wal dump %s", path)
		}
		br, err := batch.NewReader(rec)
		if err != nil {
			return errors.Wrapf(err, "strata: wal dump %s: record at offset %d", path, r.Offset())
		}
		line.Reset()
		// The header's sequence number: br.Seq is that of the record last read.
		fmt.Fprintf(&line, "%d,%d,%d,%d,", binary.LittleEndian.Uint64(rec[:8]), br.Count(), len(rec), r.Offset())
		for {
			// NextCF: a dump shows every column family, as ldb's does.
			cf, kind, k, v, err := br.NextCF()
			if err == io.EOF {
				break
			}
			if err != nil {
				return errors.Wrapf(err, "strata: wal dump %s: record at offset %d", path, r.Offset())
			}
			switch kind {
			case base.KindSet, base.KindMerge:
				op := "PUT"
				if kind == base.KindMerge {
					op = "MERGE"
				}
				fmt.Fprintf(&line, "%s(%d) : %s ", op, cf, toHex(k))
				if c.printValue {
					fmt.Fprintf(&line, ": %s ", toHex(v))
				}
			case base.KindDelete:
				fmt.Fprintf(&line, "DELETE(%d) : %s ", cf, toHex(k))
			case base.KindSingleDelete:
				fmt.Fprintf(&line, "SINGLE_DELETE(%d) : %s ", cf, toHex(k))
			case base.KindRangeDelete:
				fmt.Fprintf(&line, "DELETE_RANGE(%d) : %s %s ", cf, toHex(k), toHex(v))
			case base.KindBlobIndex:
				fmt.Fprintf(&line, "PUT_BLOB_INDEX(%d) : %s ", cf, toHex(k))
				if c.printValue {
					fmt.Fprintf(&line, ": %s ", toHex(v))
				}
			}
		}
		line.WriteByte('\n')
		if _, err := io.WriteString(c.out, line.String()); err != nil {
			return err
		}
	}
}
