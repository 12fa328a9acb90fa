package main

import (
	"fmt"

	"github.com/stratadb/strata/bench/dbgen"
)

// readWhileWriting runs -threads readrandom threads plus thread 0, a
// writer that overwrites random keys until every reader has finished. As
// in db_bench, the writer's ops are left out of the result line (they do
// count in -report_file).
func (b *bench) readWhileWriting(t *threadState) error {
	if t.tid > 0 {
		return b.readRandom(t)
	}
	return b.bgWriter(t)
}

func (b *bench) bgWriter(t *threadState) error {
	t.stats.excluded = true
	c := b.cfg
	vg := dbgen.NewValueGen(c.compRatio, c.valueSize)
	keys := b.newKeys(1)
	vals := make([][]byte, 1)
	var nbytes int64
	for {
		t.rand.Next() // database selector
		if t.shared.othersDone() {
			break
		}
		b.randomKey(t, keys[0])
		vals[0] = vg.Generate(c.valueSize)
		if err := b.eng.Write(keys, vals, b.wo); err != nil {
			return fmt.Errorf("put or merge error: %w", err)
		}
		nbytes += int64(len(keys[0]) + len(vals[0]))
		t.stats.finishedOps(1, opWrite)
	}
	t.stats.bytes += nbytes
	return nil
}
