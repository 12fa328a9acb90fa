package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/stratadb/strata/bench/dbgen"
)

// run sets up the database directory, the engine and the reporter, runs
// the benchmarks and tears everything down.
func run(c *config, stdout, stderr io.Writer) (err error) {
	if openFunc == nil {
		return errors.New("no engine linked in")
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.traceFile != "" {
		f, err := os.Create(c.traceFile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if c.mutexProfile != "" {
		f, err := os.Create(c.mutexProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		prev := runtime.SetMutexProfileFraction(1)
		defer func() {
			runtime.SetMutexProfileFraction(prev)
			if perr := pprof.Lookup("mutex").WriteTo(f, 0); err == nil {
				err = perr
			}
		}()
	}
	b := &bench{cfg: c, out: stdout, errOut: stderr,
		kg: dbgen.KeyGen{PrefixSize: c.prefixSize, KeysPerPrefix: c.keysPerPrefix}}
	if c.progressReports && isTerminal(stderr) {
		b.progress = &progressLine{w: stderr}
		defer b.progress.clear() // before realMain prints an error
	}
	cleanup, err := b.prepareDir()
	if err != nil {
		return err
	}
	defer cleanup()
	b.seedBase = c.seed
	if b.seedBase == 0 {
		b.seedBase = time.Now().UnixMicro()
		fmt.Fprintf(stdout, "Set seed to %d because --seed was 0\n", b.seedBase)
	}
	if b.eng, err = openFunc(c); err != nil {
		return fmt.Errorf("open %s: %w", b.dir, err)
	}
	if err := b.setFamilies(); err != nil {
		b.eng.Close()
		return err
	}
	var mem *memoryReport
	defer func() {
		if cerr := b.eng.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
		if err == nil && mem != nil {
			// Last, on a line of its own, and after Close: its final flush
			// counts toward the peak too. The progress line (stderr, maybe
			// the same terminal) is blanked first.
			b.progress.clear()
			mem.peakRSS = peakRSS()
			mem.print(stdout)
		}
	}()
	b.printHeader()
	if c.reportIntervalSecs > 0 {
		if b.rep, err = startReporter(c.reportFile, time.Duration(c.reportIntervalSecs)*time.Second); err != nil {
			return err
		}
	}
	err = b.runAll()
	if b.rep != nil {
		points, rerr := b.rep.stop()
		if rerr == nil && c.reportPlot != "" {
			rerr = writePlot(c.reportPlot, points)
		}
		err = errors.Join(err, rerr)
	}
	if err == nil && c.statistics {
		fmt.Fprintf(stdout, "STATISTICS:\n")
		printProperties(stdout, b.eng, statsProperties)
		printWriteAmp(stdout, b.eng)
	}
	if err == nil {
		// The heap with the database still open; peak RSS after Close.
		m := readMemory()
		mem = &m
		if c.memProfile != "" {
			err = writeHeapProfile(c.memProfile)
		}
	}
	return err
}

// prepareDir picks the database directory: -db, or a fresh temporary one
// removed by the returned cleanup. Without -use_existing_db an existing
// database there is destroyed first, as db_bench does.
func (b *bench) prepareDir() (cleanup func(), err error) {
	c := b.cfg
	cleanup = func() {}
	if c.db == "" {
		if c.useExistingDB {
			return nil, errors.New("-use_existing_db and -readonly need -db")
		}
		tmp, err := os.MkdirTemp("", "dbbench-")
		if err != nil {
			return nil, err
		}
		b.dir = filepath.Join(tmp, "db")
		c.db = b.dir
		return func() { os.RemoveAll(tmp) }, nil
	}
	b.dir = c.db
	if !c.useExistingDB {
		if err := destroyDB(b.dir); err != nil {
			return nil, err
		}
	}
	return cleanup, nil
}

// dbFile matches the names of the files a database directory holds
// (RocksDB's names); destroyDB removes only those, never anything else.
var dbFile = regexp.MustCompile(`^([0-9]+\.(sst|log|dbtmp)|MANIFEST-[0-9]+|OPTIONS-[0-9]+(\.dbtmp)?|CURRENT|LOCK|IDENTITY|LOG(\.old\.[0-9]+)?)$`)

// destroyDB deletes the database files in dir, then dir itself if that
// leaves it empty. A missing dir is not an error.
func destroyDB(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	left := 0
	for _, e := range ents {
		if e.IsDir() || !dbFile.MatchString(e.Name()) {
			left++
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("destroy %s: %w", dir, err)
		}
	}
	if left == 0 {
		return os.Remove(dir)
	}
	return nil
}

// reopenFresh closes the engine, destroys the database and opens an empty
// one, for the benchmarks that need one.
func (b *bench) reopenFresh() error {
	if err := b.eng.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	b.eng = closedEngine{}
	if err := destroyDB(b.dir); err != nil {
		return err
	}
	e, err := openFunc(b.cfg)
	if err != nil {
		return fmt.Errorf("open %s: %w", b.dir, err)
	}
	b.eng = e
	return b.setFamilies()
}

// setFamilies starts the family selector over a freshly opened engine:
// the first hot families exist (Open created them).
func (b *bench) setFamilies() error {
	b.fams, b.cfe = newFamilies(b.cfg), nil
	if b.fams == nil {
		return nil
	}
	cfe, ok := b.eng.(cfEngine)
	if !ok {
		return errors.New("-num_column_families > 1: the engine has no column families")
	}
	b.cfe = cfe
	return nil
}

// printHeader prints db_bench's run description.
func (b *bench) printHeader() {
	c, w := b.cfg, b.out
	fmt.Fprintf(w, "Strata:     dbbench (%s, GOMAXPROCS=%d)\n", runtime.Version(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "Date:       %s\n", time.Now().Format(time.ANSIC))
	fmt.Fprintf(w, "Keys:       %d bytes each (+ 0 bytes user-defined timestamp)\n", c.keySize)
	fmt.Fprintf(w, "Values:     %d bytes each (%d bytes after compression)\n", c.valueSize, int(float64(c.valueSize)*c.compRatio+0.5))
	fmt.Fprintf(w, "Entries:    %d\n", c.num)
	fmt.Fprintf(w, "Prefix:    %d bytes\n", c.prefixSize)
	fmt.Fprintf(w, "Keys per prefix:    %d\n", c.keysPerPrefix)
	fmt.Fprintf(w, "RawSize:    %.1f MB (estimated)\n", float64(int64(c.keySize+c.valueSize)*c.num)/1048576.0)
	fmt.Fprintf(w, "FileSize:   %.1f MB (estimated)\n", (float64(c.keySize)+float64(c.valueSize)*c.compRatio)*float64(c.num)/1048576.0)
	fmt.Fprintf(w, "Compression: %s\n", c.compression)
	fmt.Fprintf(w, "DB:         %s\n", b.dir)
	fmt.Fprintf(w, "------------------------------------------------\n")
}

// closedEngine stands in while the engine is being reopened, so that a
// failed reopen leaves nothing to close twice.
type closedEngine struct{}

var errEngineClosed = errors.New("engine closed")

func (closedEngine) Write([][]byte, [][]byte, writeOpts) error { return errEngineClosed }
func (closedEngine) Merge([]byte, []byte, writeOpts) error     { return errEngineClosed }
func (closedEngine) Get([]byte) ([]byte, bool, error)          { return nil, false, errEngineClosed }
func (closedEngine) MultiGet([][]byte) ([][]byte, []bool, error) {
	return nil, nil, errEngineClosed
}
func (closedEngine) NewIterator(readOpts) iter      { return nil }
func (closedEngine) Flush() error                   { return errEngineClosed }
func (closedEngine) CompactRange() error            { return errEngineClosed }
func (closedEngine) Property(string) (string, bool) { return "", false }
func (closedEngine) Close() error                   { return nil }
