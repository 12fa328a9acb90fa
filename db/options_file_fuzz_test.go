package db

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/optionsfile"
	"github.com/stretchr/testify/require"
)

// FuzzParseOptionsFile parses arbitrary bytes as a RocksDB OPTIONS file.
// `go test` replays the seeds and testdata/fuzz/FuzzParseOptionsFile; run it
// with
//
//	go test ./db -run '^$' -fuzz '^FuzzParseOptionsFile$' -fuzztime 60s -fuzzminimizetime=1s -parallel=1
//
// Parsing either fails with ErrCorruption or yields the required sections
// and a structure that, written out again, parses to the same structure;
// checking a parsed file against Strata's options refuses it only with
// ErrInvalidArgument.
func FuzzParseOptionsFile(f *testing.F) {
	d := &DB{opts: (*Options)(nil).withDefaults()}
	ours := d.optionsEntries()
	f.Add(optionsfile.Render(ours))
	for _, name := range []string{"fv5-xxh3-snappy-bloom10", "ldb-cf"} {
		paths, err := filepath.Glob(filepath.Join("testdata", "rocksdb", name, "db", "OPTIONS-*"))
		require.NoError(f, err)
		for _, p := range paths {
			b, err := os.ReadFile(p)
			require.NoError(f, err)
			f.Add(b)
		}
	}
	f.Add([]byte("[Version]\nrocksdb_version=7.8.3\noptions_file_version=1.1\n[DBOptions]\n" +
		"[CFOptions \"default\"]\n  comparator=leveldb.BytewiseComparator # c\nx=a\\#b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := optionsfile.Parse("OPTIONS-000001", data)
		if err != nil {
			require.True(t, errors.Is(err, ErrCorruption), "unexpected error class: %v", err)
			return
		}
		for _, s := range pf.Sections {
			require.Equal(t, len(s.Keys), len(s.Values), "section %s", s.Title())
		}
		again, err := optionsfile.Parse("OPTIONS-000001", renderParsed(pf))
		require.NoError(t, err, "a parsed file written out again does not parse")
		require.Equal(t, pf, again)
		if _, err := optionsfile.Check(pf, ours); err != nil {
			require.True(t, errors.Is(err, ErrInvalidArgument), "unexpected error class: %v", err)
		}
	})
}

// renderParsed writes a parsed OPTIONS file out again, section by section
// and key by key in file order.
func renderParsed(pf *optionsfile.File) []byte {
	var b bytes.Buffer
	for _, s := range pf.Sections {
		b.WriteString("[" + s.Name)
		if s.Arg != "" {
			b.WriteString(" \"" + s.Arg + "\"")
		}
		b.WriteString("]\n")
		for _, k := range s.Keys {
			b.WriteString(k + "=" + s.Values[k] + "\n")
		}
	}
	return b.Bytes()
}
