package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBench_ResultLinesStartLines runs dbbench with stdout and stderr on
// one file, as `dbbench ... >out 2>&1` does, with progress reports on (the
// default): every benchmark's result line must start a line, so that
// `grep '^readrandom'` finds it.
func TestBench_ResultLinesStartLines(t *testing.T) {
	useFake(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	require.NoError(t, err)
	defer f.Close()
	names := []string{"fillseq", "fillrandom", "readrandom", "readseq", "seekrandom"}
	code := realMain([]string{"-seed=1", "-num=1000", "-benchmarks=" + strings.Join(names, ",")}, f, f)
	require.Equal(t, 0, code)
	data, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	out := string(data)
	for _, name := range names {
		require.Regexp(t, regexp.MustCompile(`(?m)^`+name+` +: +\d+\.\d{3} micros/op `), out, "no line starts with %s's result", name)
	}
	require.NotContains(t, out, "\r", "progress lines written to a file")
	require.NotContains(t, out, "finished")
}

// screenLine replays s on a one-line terminal: "\r" returns to column 0,
// "\n" starts a new line, other bytes overwrite. It returns the lines.
func screenLines(s string) []string {
	var lines []string
	var cur []byte
	col := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			col = 0
		case '\n':
			lines = append(lines, strings.TrimRight(string(cur), " "))
			cur, col = cur[:0], 0
		default:
			if col < len(cur) {
				cur[col] = c
			} else {
				cur = append(cur, c)
			}
			col++
		}
	}
	return append(lines, strings.TrimRight(string(cur), " "))
}

// TestProgressLine checks that on a terminal the result line after
// progress lines starts at column 0 and shows none of them, however
// short it is.
func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{w: &buf}
	p.report(100)
	p.report(123456789)
	p.clear()
	buf.WriteString("x : 1.000 micros/op\n")
	require.Equal(t, []string{"x : 1.000 micros/op", ""}, screenLines(buf.String()))

	buf.Reset()
	p.clear() // nothing on screen: prints nothing
	require.Empty(t, buf.String())

	var none *progressLine // progress off
	none.report(1)
	none.clear()
}

func TestIsTerminal_NotForFilesAndBuffers(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer f.Close()
	require.False(t, isTerminal(f))
	require.False(t, isTerminal(&bytes.Buffer{}))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.False(t, isTerminal(w))
}
