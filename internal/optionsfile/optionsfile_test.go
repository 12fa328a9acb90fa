package optionsfile

import (
	"testing"

	"github.com/stratadb/strata/internal/base"
	"github.com/stretchr/testify/require"
)

// TestParse covers the INI details: comments, escapes,
// section arguments and nested values.
func TestParse(t *testing.T) {
	f, err := Parse("OPTIONS-000007", []byte(`# comment
[Version]
  rocksdb_version=7.8.3
  options_file_version=1.1
[DBOptions]
  db_host_id=__hostname__  # trailing comment
[CFOptions "default"]
  merge_operator={id=StringAppendOperator;delimiter=\#;}
  compaction_options_fifo={allow_compaction=true;max_table_files_size=5;}
[TableOptions/BlockBasedTable "default"]
  filter_policy=bloomfilter:10:false
`))
	require.NoError(t, err)
	require.Equal(t, "__hostname__", f.Section(SecDB, "").Values["db_host_id"])
	cf := f.Section(SecCF, "default")
	require.Equal(t, `{id=StringAppendOperator;delimiter=\#;}`, cf.Values["merge_operator"])
	require.Equal(t, map[string]string{"allow_compaction": "true", "max_table_files_size": "5"},
		ParseNested(cf.Values["compaction_options_fifo"]))
	require.Equal(t, "bloomfilter:10:false", f.Section(SecTable, "default").Values["filter_policy"])

	for _, bad := range []string{"  a=b\n", "[Version\n", "[CFOptions default]\n"} {
		_, err := Parse("OPTIONS-000009", []byte(bad))
		require.ErrorIs(t, err, base.ErrCorruption, "%q", bad)
		require.ErrorContains(t, err, "OPTIONS-000009 line 1")
	}
}

// TestRenderParseCheck: a rendered file parses back to its entries, checks
// clean against them, and reports a differing value and an unsupported
// feature.
func TestRenderParseCheck(t *testing.T) {
	ours := []Entry{
		{Section: SecVersion, Key: "rocksdb_version", Value: "7.8.3", OpenOnly: true},
		{Section: SecVersion, Key: "options_file_version", Value: "1.1", OpenOnly: true},
		{Section: SecDB, Key: "max_background_jobs", Value: "2"},
		{Section: SecCF, Arg: "default", Key: "comparator", Value: base.ComparatorName},
		{Section: SecCF, Arg: "default", Key: "max_bytes_for_level_multiplier", Value: "10.000000", Equal: SameFloat},
	}
	text := Render(ours)
	f, err := Parse("OPTIONS-000005", text)
	require.NoError(t, err)
	for _, e := range ours {
		require.Equal(t, e.Value, f.Section(e.Section, e.Arg).Values[e.Key], e.Key)
	}
	report, err := Check(f, ours)
	require.NoError(t, err)
	require.Empty(t, report)

	f.Section(SecDB, "").Values["max_background_jobs"] = "8"
	f.Section(SecCF, "default").Values["max_bytes_for_level_multiplier"] = "10"
	f.Section(SecCF, "default").Values["compaction_filter"] = "MyFilter"
	report, err = Check(f, ours)
	require.NoError(t, err)
	require.Equal(t, []string{
		"[DBOptions] max_background_jobs=8: Strata uses 2",
		`[CFOptions "default"] compaction_filter=MyFilter: compaction filters are not supported`,
	}, report)

	// Other column families are fine; a compaction filter in one is
	// reported under its section.
	f.Sections = append(f.Sections, &Section{Name: SecCF, Arg: "other", Values: map[string]string{"compaction_filter": "F"}})
	report, err = Check(f, ours)
	require.NoError(t, err)
	require.Contains(t, report, `[CFOptions "other"] compaction_filter=F: compaction filters are not supported`)

	// Comparators are the db's to check against the options a family is
	// opened with: Check refuses none.
	f.Section(SecCF, "other").Values["comparator"] = "rocksdb.ReverseBytewiseComparator"
	_, err = Check(f, ours)
	require.NoError(t, err)
}

func TestPrefixExtractorName(t *testing.T) {
	for name, want := range map[string]string{
		"rocksdb.FixedPrefix.4":   "rocksdb.FixedPrefix.4",
		"rocksdb.CappedPrefix.12": "rocksdb.CappedPrefix.12",
		"rocksdb.Noop":            "rocksdb.Noop",
		"rocksdb.FixedPrefix.x":   "nullptr",
		"my.custom.extractor":     "nullptr",
	} {
		require.Equal(t, want, PrefixExtractorName(name), name)
	}
}
