// Command dbbench runs RocksDB db_bench workloads against Strata. It takes
// db_bench's flag names, defaults and meanings for everything the engine
// supports, generates the same keys, values and random key sequences for a
// given -seed, and prints db_bench's result lines, so one command line runs
// against both and the lines compare directly:
//
//	go run ./cmd/dbbench -benchmarks=fillrandom,readrandom -num=1000000 -seed=1
//	readrandom   :       3.412 micros/op 293083 ops/sec 3.412 seconds 1000000 operations;   33.5 MB/s (632042 of 1000000 found)
//
// Unknown flags, unknown benchmarks and values the engine does not support
// are errors (exit status 1). scripts/compare-rocksdb.sh runs the same
// arguments through both tools and tabulates the ratios.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain runs dbbench and returns its exit status.
func realMain(args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = run(c, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dbbench: %v\n", err)
		return 1
	}
	return 0
}
