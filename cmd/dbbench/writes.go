package main

import (
	"fmt"

	"github.com/stratadb/strata/bench/dbgen"
)

// Write benchmarks: fillseq, fillbatch (fillseq in batches of 1000),
// fillrandom, overwrite, fillsync (fillrandom over -num/1000 keys, synced)
// and deleterandom. As db_bench's DoWrite, every write is one batch of
// -batch_size entries; a random write draws once per batch (db_bench's
// database selector) and once per key.

func (b *bench) writeSeq(t *threadState) error    { return b.doWrite(t, false) }
func (b *bench) writeRandom(t *threadState) error { return b.doWrite(t, true) }

func (b *bench) doWrite(t *threadState, random bool) error {
	c := b.cfg
	seconds := 0
	if random {
		seconds = c.duration // -duration applies to random writes only
	}
	numOps := b.writes
	if numOps == 0 {
		numOps = b.num
	}
	d := b.newDuration(seconds, numOps)
	if b.num != c.num {
		t.stats.addMessage(fmt.Sprintf("(%d ops)", b.num))
	}
	vg := dbgen.NewValueGen(c.compRatio, c.valueSize)
	keys := b.newKeys(b.batch)
	vals := make([][]byte, b.batch)
	var cfs []int
	var opsPerStage, stage int64
	if b.fams != nil {
		cfs = make([]int, b.batch)
		opsPerStage = b.fams.opsPerStage(numOps)
	}
	var next uint64
	var bytes int64
	for b.num != 0 && !d.done(b.batch) {
		if opsPerStage > 0 {
			// db_bench's Duration::GetStage.
			if s := min(d.ops, numOps-1) / opsPerStage; s != stage {
				stage = s
				if err := b.fams.enterStage(b.cfe, stage); err != nil {
					return err
				}
			}
		}
		if random {
			t.rand.Next() // db_bench's database selector
		}
		for j := range keys {
			v := next
			if random {
				v = t.rand.Next() % uint64(b.num)
			} else {
				next++
			}
			b.kg.Fill(keys[j], v, c.num)
			vals[j] = vg.Generate(c.valueSize)
			bytes += int64(c.valueSize + b.keySize)
			if cfs != nil {
				cfs[j] = b.fams.of(v)
			}
		}
		var err error
		if cfs != nil {
			err = b.cfe.WriteCF(cfs, keys, vals, b.wo)
		} else {
			err = b.eng.Write(keys, vals, b.wo)
		}
		if err != nil {
			return fmt.Errorf("put error: %w", err)
		}
		t.stats.finishedOps(b.batch, opWrite)
	}
	t.stats.bytes += bytes
	return nil
}

// deleteRandom deletes random keys in batches, db_bench's DoDelete.
func (b *bench) deleteRandom(t *threadState) error {
	d := b.newDuration(b.cfg.duration, b.deletes)
	keys := b.newKeys(b.batch)
	for !d.done(b.batch) {
		t.rand.Next() // database selector
		for _, k := range keys {
			b.randomKey(t, k)
		}
		if err := b.eng.Write(keys, nil, b.wo); err != nil {
			return fmt.Errorf("del error: %w", err)
		}
		t.stats.finishedOps(b.batch, opDelete)
	}
	return nil
}
