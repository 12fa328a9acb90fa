// Command strata inspects and edits a Strata (or RocksDB) database: the
// verbs of package tool (db scan/get/put/delete, wal dump, manifest dump,
// ...); see docs/tools.md. cmd/sstdump stays the sst_dump-compatible
// single-file tool.
package main

import (
	"os"

	"github.com/stratadb/strata/tool"
)

func main() {
	os.Exit(tool.New().Run(os.Args[1:], os.Stdout, os.Stderr))
}
