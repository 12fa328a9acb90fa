package version

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
)

// TestPicker_DataDriven runs the leveled compaction picker over the LSMs of
// testdata/compaction_picker. Commands:
//
//	define [l0-trigger=N] [base=N] [mult=N] [dynamic]
//	L<n>: <file> <file> ...
//
// defines the Version (and picker options; defaults l0-trigger=4 base=100
// mult=10, static sizing) the next commands work on. A file is
// NUM:SMALLEST-LARGEST, optionally followed by size=BYTES (default 100) and
// compacting (the file is an input of an in-flight compaction). Files are
// listed in the level's order (L0 newest first); each file's keys carry
// sequence number NUM. It prints the base level and each level's score.
//
//	pick [busy=L]
//
// prints PickLeveled's choice: start and output levels, the score, and the
// input files of each, or "none". busy=L says an in-flight compaction
// writes into level L over every range.
//
//	seek file=NUM
//
// prints PickSeek's choice for the file, seek compaction into the base
// level, or its SeekState.
func TestPicker_DataDriven(t *testing.T) {
	var v *Version
	var o PickerOptions
	datadriven.RunTest(t, "testdata/compaction_picker", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "define":
			o = PickerOptions{L0Trigger: 4, BaseBytes: 100, Multiplier: 10}
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "l0-trigger":
					d.ScanArgs(t, "l0-trigger", &o.L0Trigger)
				case "base":
					d.ScanArgs(t, "base", &o.BaseBytes)
				case "mult":
					d.ScanArgs(t, "mult", &o.Multiplier)
				case "dynamic":
					o.Dynamic = true
				default:
					d.Fatalf(t, "unknown argument %q", a.Key)
				}
			}
			var err error
			if v, err = parseLSM(d.Input); err != nil {
				d.Fatalf(t, "%v", err)
			}
			s, baseLevel := v.ScoresAndBase(o)
			var b strings.Builder
			fmt.Fprintf(&b, "base=L%d\n", baseLevel)
			for level := 0; level < NumLevels-1; level++ {
				if len(v.Levels[level]) > 0 {
					fmt.Fprintf(&b, "L%d score=%.2f\n", level, s[level])
				}
			}
			return b.String()
		case "pick":
			var busy Busy
			if d.HasArg("busy") {
				var l int
				d.ScanArgs(t, "busy", &l)
				busy = func(level int, _, _ []byte) bool { return level == l }
			}
			p := v.PickLeveled(o, busy, &[NumLevels][]byte{})
			if p == nil {
				return "none\n"
			}
			return formatPick(p, fmt.Sprintf(" score=%.2f", p.Score))
		case "seek":
			var num uint64
			d.ScanArgs(t, "file", &num)
			for level := range v.Levels {
				for _, f := range v.Levels[level] {
					if f.FileNum != num {
						continue
					}
					p, st := v.PickSeek(f, level, v.BaseLevel(o), nil)
					switch st {
					case SeekPicked:
						return formatPick(p, "")
					case SeekGone:
						return "gone\n"
					default:
						return "busy\n"
					}
				}
			}
			d.Fatalf(t, "no file %d", num)
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func formatPick(p *Pick, score string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "L%d -> L%d%s\n", p.StartLevel, p.OutputLevel, score)
	for i, level := range []int{p.StartLevel, p.OutputLevel} {
		fmt.Fprintf(&b, "  L%d:", level)
		for _, f := range p.Inputs[i] {
			fmt.Fprintf(&b, " %06d", f.FileNum)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// parseLSM parses define's input (see TestPicker_DataDriven).
func parseLSM(input string) (*Version, error) {
	v := &Version{}
	for _, line := range strings.Split(input, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, files, ok := strings.Cut(line, ":")
		level, err := strconv.Atoi(strings.TrimPrefix(name, "L"))
		if !ok || !strings.HasPrefix(name, "L") || err != nil || level < 0 || level >= NumLevels {
			return nil, errors.Newf("bad level in %q", line)
		}
		var f *FileMetadata
		for _, tok := range strings.Fields(files) {
			switch {
			case strings.HasPrefix(tok, "size="):
				n, err := strconv.ParseUint(strings.TrimPrefix(tok, "size="), 10, 64)
				if err != nil || f == nil {
					return nil, errors.Newf("bad %q in %q", tok, line)
				}
				f.Size = n
			case tok == "compacting":
				if f == nil {
					return nil, errors.Newf("bad %q in %q", tok, line)
				}
				f.Compacting = true
			default:
				numStr, keys, ok1 := strings.Cut(tok, ":")
				smallest, largest, ok2 := strings.Cut(keys, "-")
				num, err := strconv.ParseUint(numStr, 10, 64)
				if !ok1 || !ok2 || err != nil {
					return nil, errors.Newf("bad file %q in %q", tok, line)
				}
				seq := base.SeqNum(num)
				f = &FileMetadata{FileNum: num, Size: 100, Smallest: ikey(smallest, seq),
					Largest: ikey(largest, seq), SmallestSeq: seq, LargestSeq: seq}
				v.Levels[level] = append(v.Levels[level], f)
			}
		}
	}
	return v, nil
}
