// Command sstdump prints and checks one table file, ours or RocksDB's, in
// the output forms of RocksDB's sst_dump, so that the two tools' outputs
// compare line for line:
//
//	sstdump -file=000009.sst -command=scan [-output_hex] [-from=K] [-to=K]
//	sstdump -file=000009.sst -command=verify
//	sstdump -file=000009.sst -command=properties
//
// scan prints the header lines "Process F", "Sst file format: block-based"
// and "from [K] to [K]", then one line per point entry in table order:
//
//	'KEY' seq:N, type:T => VALUE
//
// where KEY and VALUE are the raw bytes, or upper-case hex with
// -output_hex; either way the output is byte-identical to sst_dump's. Like
// sst_dump (which prints C strings), the raw form cuts the key part and the
// value at their first NUL byte: use -output_hex for binary data.
// -from starts at the first entry whose user key is >= K, -to stops before
// the first one whose user key is >= K; -input_key_hex reads K as hex
// (with or without a 0x prefix); -read_num stops after that many entries.
// Range tombstones are not printed, as in sst_dump.
//
// verify reads every block of the file and checks its checksum
// (table.Reader.VerifyChecksums) and prints "The file is ok".
//
// properties prints the table properties in sst_dump --show_properties
// form, followed by the footer's format version and checksum type. The
// "unique ID" line is left out: it is a hash of the DB and session
// identities that only RocksDB needs.
//
// Exit status: 0 on success, 1 when the file cannot be read or is corrupt
// (a corruption error goes to stderr as "F is corrupted: <error>", any
// other as "sstdump: <error>"), 2 on bad flags.
package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/table"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	file        string
	command     string
	outputHex   bool
	inputKeyHex bool
	from, to    []byte
	hasFrom     bool
	hasTo       bool
	readNum     int64
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("sstdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var from, to string
	fs.StringVar(&c.file, "file", "", "table file to read")
	fs.StringVar(&c.command, "command", "scan", "scan, verify or properties")
	fs.BoolVar(&c.outputHex, "output_hex", false, "scan: print keys and values in upper-case hex")
	fs.BoolVar(&c.inputKeyHex, "input_key_hex", false, "-from and -to are hex")
	fs.StringVar(&from, "from", "", "scan: first user key (inclusive)")
	fs.StringVar(&to, "to", "", "scan: last user key (exclusive)")
	fs.Int64Var(&c.readNum, "read_num", 0, "scan: stop after this many entries (0 = all)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, errors.Newf("unexpected argument %q", fs.Arg(0))
	}
	if c.file == "" {
		return nil, errors.New("-file is required")
	}
	fs.Visit(func(f *flag.Flag) {
		c.hasFrom = c.hasFrom || f.Name == "from"
		c.hasTo = c.hasTo || f.Name == "to"
	})
	var err error
	if c.from, err = c.decodeKey(from); err != nil {
		return nil, err
	}
	if c.to, err = c.decodeKey(to); err != nil {
		return nil, err
	}
	switch c.command {
	case "scan", "verify", "properties":
	default:
		return nil, errors.Newf("unknown -command %q (want scan, verify or properties)", c.command)
	}
	return c, nil
}

func (c *config) decodeKey(s string) ([]byte, error) {
	if !c.inputKeyHex {
		return []byte(s), nil
	}
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil {
		return nil, errors.Wrapf(err, "bad hex key %q", s)
	}
	return b, nil
}

// realMain runs sstdump and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sstdump: %v\n", err)
		return 2
	}
	if err := run(c, stdout); err != nil {
		if errors.Is(err, base.ErrCorruption) {
			fmt.Fprintf(stderr, "%s is corrupted: %v\n", c.file, err)
		} else {
			fmt.Fprintf(stderr, "sstdump: %v\n", err)
		}
		return 1
	}
	return 0
}

func run(c *config, stdout io.Writer) error {
	f, err := os.Open(c.file)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(stdout, "Process %s\n", c.file)
	r, err := table.Open(f, st.Size(), table.ReaderOptions{FileName: c.file})
	if err != nil {
		f.Close()
		return err
	}
	defer r.Close()
	fmt.Fprintf(stdout, "Sst file format: block-based\n")
	switch c.command {
	case "verify":
		if err := r.VerifyChecksums(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "The file is ok\n")
		return nil
	case "properties":
		writeProperties(stdout, r.Properties())
		return nil
	}
	return scan(c, r, stdout)
}

// toString renders b as sst_dump's Slice::ToString(hex) does.
func toString(b []byte, hexOut bool) string {
	if hexOut {
		return strings.ToUpper(hex.EncodeToString(b))
	}
	return string(b)
}

// cString cuts s at its first NUL byte, as sst_dump's printf("%s") does.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func scan(c *config, r *table.Reader, stdout io.Writer) error {
	fmt.Fprintf(stdout, "from [%s] to [%s]\n", toString(c.from, c.outputHex), toString(c.to, c.outputHex))
	it := r.NewIter()
	var ok bool
	if c.hasFrom {
		ok = it.SeekGE(c.from)
	} else {
		ok = it.First()
	}
	var n int64
	for ; ok; ok = it.Next() {
		n++
		if c.readNum > 0 && n > c.readNum {
			break
		}
		k := it.Key()
		if c.hasTo && string(k.UserKey) >= string(c.to) {
			break
		}
		ikey := fmt.Sprintf("'%s' seq:%d, type:%d", toString(k.UserKey, c.outputHex),
			uint64(k.SeqNum()), uint8(k.Kind()))
		fmt.Fprintf(stdout, "%s => %s\n", cString(ikey), cString(toString(it.Value(), c.outputHex)))
	}
	if err := it.Error(); err != nil {
		it.Close()
		return err
	}
	return it.Close()
}
