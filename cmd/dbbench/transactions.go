package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// randomtransaction, as db_bench's RandomTransaction with RocksDB's
// RandomTransactionInserter (test_util/transaction_test_util.cc): each op
// is one transaction that, for each of -transaction_sets sets in a random
// order, reads a random key of the set (key "%04d" of the set number, then
// the decimal key number below -num; a missing key reads as 0), by Get or
// GetForUpdate at random, and puts it back plus one increment drawn per
// transaction (1..100). 5% of the transactions roll back instead of
// committing. Since every committed transaction adds the same amount to
// every set, the sets' sums must be equal afterwards: the verification
// (db_bench's RandomTransactionVerify) sums each set by an iterator and
// prints "RandomTransactionVerify Success." or "... FAILED!!" (then, unlike
// db_bench, dbbench also exits with status 1).
//
// -optimistic_transaction_db runs optimistic transactions, -transaction_db
// pessimistic ones (lock waits bounded by -transaction_lock_timeout ms), at
// SnapshotIsolation (RocksDB's only level); neither runs plain write
// batches (db_bench's DBInsert) and verifies nothing. "aborts" counts the
// transactions that failed with a conflict (a lock timeout, a deadlock, a
// failed validation); the result line carries the first thread's counts,
// as db_bench's, and dbbench adds a line with the totals of all threads.
// -transaction_sleep sleeps up to that many microseconds between the read
// and the write of each key, as the flag's help says; RocksDB 7.8's
// db_bench declares the flag but never reads it. The pessimistic inserter
// of db_bench also calls Prepare (two-phase commit) on 90% of its
// transactions; Strata has no two-phase commit, so that step is absent.

// errTxnConflict marks a transaction error that the benchmark expects and
// counts as an abort (RocksDB's Busy, TimedOut, TryAgain).
var errTxnConflict = errors.New("transaction conflict")

// txnEngine is what randomtransaction needs beyond engine.
type txnEngine interface {
	// BeginTxn starts a transaction; pessimistic ones wait lockTimeout for
	// a lock.
	BeginTxn(pessimistic bool, lockTimeout time.Duration, wo writeOpts) txn
}

// txn is one transaction. Errors that wrap errTxnConflict are conflicts.
type txn interface {
	Get(key []byte, forUpdate bool) ([]byte, bool, error)
	Put(key, val []byte) error
	Commit() error
	Rollback() error
}

// txnKey is RandomTransactionInserter's key: the set number (from 1) in
// four digits, then the key number in decimal.
func txnKey(set int, k uint64) []byte {
	return strconv.AppendUint(fmt.Appendf(nil, "%04d", set+1), k, 10)
}

// txnInserter is one thread's RandomTransactionInserter.
type txnInserter struct {
	b                  *bench
	t                  *threadState
	te                 txnEngine
	sets               []int
	successes, failure int64
	bytes              int64
	keys, vals         [][]byte
}

func (b *bench) randomTransaction(t *threadState) error {
	c := b.cfg
	ins := &txnInserter{b: b, t: t, sets: make([]int, c.transactionSets)}
	if c.optimisticTxnDB || c.transactionDB {
		te, ok := b.eng.(txnEngine)
		if !ok {
			return errors.New("the engine has no transactions")
		}
		ins.te = te
	}
	d := b.newDuration(c.duration, b.readWrites())
	var done int64
	for !d.done(1) {
		if err := ins.insert(); err != nil {
			return fmt.Errorf("Unexpected error: %w", err)
		}
		t.stats.finishedOps(1, opOthers)
		done++
	}
	if c.optimisticTxnDB || c.transactionDB {
		t.stats.addMessage(fmt.Sprintf("( transactions:%d aborts:%d)", done, ins.failure))
	} else {
		t.stats.addMessage(fmt.Sprintf("( batches:%d )", done))
	}
	t.stats.bytes += ins.bytes
	b.txnTotals.Lock()
	b.txnTotals.done += done
	b.txnTotals.aborts += ins.failure
	b.txnTotals.Unlock()
	return nil
}

// insert is DoInsert: one transaction (or one batch without either flag).
// A conflict is counted as a failure; any other error is returned.
func (ins *txnInserter) insert() error {
	c := ins.b.cfg
	r := ins.t.rand
	incr := r.Next()%100 + 1
	for i := range ins.sets {
		ins.sets[i] = i
	}
	// A Fisher-Yates shuffle of the set order (RandomShuffle).
	for i := len(ins.sets) - 1; i > 0; i-- {
		j := int(r.Next() % uint64(i+1))
		ins.sets[i], ins.sets[j] = ins.sets[j], ins.sets[i]
	}
	var tx txn
	if ins.te != nil {
		lt := time.Duration(c.transactionLockTimeout) * time.Millisecond
		if lt <= 0 {
			lt = time.Nanosecond // RocksDB's 0: fail at once rather than wait
		}
		tx = ins.te.BeginTxn(c.transactionDB, lt, ins.b.wo)
	}
	ins.keys, ins.vals = ins.keys[:0], ins.vals[:0]
	var err error
	for _, set := range ins.sets {
		key := txnKey(set, r.Next()%uint64(max(c.num, 1)))
		forUpdate := tx != nil && r.Next()%2 == 0
		var v []byte
		var found bool
		if tx != nil {
			v, found, err = tx.Get(key, forUpdate)
		} else {
			v, found, err = ins.b.eng.Get(key)
		}
		if err != nil {
			break
		}
		var n uint64
		if found {
			if n, err = strconv.ParseUint(string(v), 10, 64); err != nil || n == 0 {
				return fmt.Errorf("Get returned unexpected value: %q", v)
			}
		}
		if c.transactionSleep > 0 {
			time.Sleep(time.Duration(r.Next()%uint64(c.transactionSleep+1)) * time.Microsecond)
		}
		sum := strconv.AppendUint(nil, n+incr, 10)
		if tx != nil {
			if err = tx.Put(key, sum); err != nil {
				break
			}
		} else {
			ins.keys, ins.vals = append(ins.keys, key), append(ins.vals, sum)
		}
		ins.bytes += int64(len(key) + len(sum))
	}
	if err == nil {
		switch {
		case tx == nil:
			if err := ins.b.eng.Write(ins.keys, ins.vals, ins.b.wo); err != nil {
				return fmt.Errorf("Write returned an unexpected error: %w", err)
			}
		case r.Next()%20 != 0:
			err = tx.Commit()
		default:
			// 5% roll back: a success, as in RocksDB.
			if err := tx.Rollback(); err != nil {
				return fmt.Errorf("Rollback returned an unexpected error: %w", err)
			}
		}
	} else if tx != nil {
		if rerr := tx.Rollback(); rerr != nil {
			return fmt.Errorf("Rollback returned an unexpected error: %w", rerr)
		}
	}
	switch {
	case err == nil:
		ins.successes++
	case errors.Is(err, errTxnConflict):
		ins.failure++
	default:
		return err
	}
	return nil
}

// randomTransactionVerify is RandomTransactionVerify: with transactions,
// every set must sum to the same total.
func (b *bench) randomTransactionVerify() error {
	c := b.cfg
	if !c.optimisticTxnDB && !c.transactionDB {
		return nil
	}
	err := b.verifyTxnSets()
	if err == nil {
		fmt.Fprintln(b.out, "RandomTransactionVerify Success.")
		return nil
	}
	fmt.Fprintln(b.out, "RandomTransactionVerify FAILED!!")
	return err
}

func (b *bench) verifyTxnSets() error {
	var prev uint64
	for set := 0; set < b.cfg.transactionSets; set++ {
		pfx := fmt.Appendf(nil, "%04d", set+1)
		it := b.eng.NewIterator(readOpts{})
		var total uint64
		for it.Seek(pfx); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) < 4 || string(k[:4]) != string(pfx) {
				break
			}
			n, err := strconv.ParseUint(string(it.Value()), 10, 64)
			if err != nil || n == 0 {
				it.Close()
				return fmt.Errorf("Iter returned unexpected value: %q", it.Value())
			}
			total += n
		}
		if err := it.Err(); err != nil {
			it.Close()
			return err
		}
		if err := it.Close(); err != nil {
			return err
		}
		if set > 0 && total != prev {
			return fmt.Errorf("RandomTransactionVerify found inconsistent totals: Set[%d]: %d, Set[%d]: %d", set-1, prev, set, total)
		}
		prev = total
	}
	return nil
}
