package db_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// After Close, every call that returns an error returns one wrapping
// ErrClosed: on transactions begun before or after the Close, on Update and
// View (fn is not run), on an indexed batch's reads; nothing panics.
func TestTransactionOnClosedDB(t *testing.T) {
	d, _ := openTest(t, &db.Options{MergeOperator: db.NewStringAppendOperator(",")})
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("k"), []byte("v"), nil))
	before := d.NewTransaction(&db.TransactionOptions{Pessimistic: true})
	put(t, before, "w", "1")
	batch := d.NewIndexedBatch()
	batch.Put([]byte("b"), []byte("1"))
	require.NoError(t, d.Close())

	after := d.NewTransaction(nil)
	for name, tx := range map[string]*db.Transaction{"begun before Close": before, "begun after Close": after} {
		k, v := []byte("k"), []byte("v")
		errs := map[string]error{
			"Put":     tx.Put(k, v),
			"Delete":  tx.Delete(k),
			"Merge":   tx.Merge(k, v),
			"PutCF":   tx.PutCF(cf, k, v),
			"MergeCF": tx.MergeCF(cf, k, v),
		}
		_, errs["Get"] = tx.Get(k)
		_, errs["GetCF"] = tx.GetCF(cf, k)
		_, errs["GetForUpdate"] = tx.GetForUpdate(k)
		_, errs["GetForUpdateCF"] = tx.GetForUpdateCF(cf, k)
		it := tx.NewIterator(nil)
		it.SeekToFirst()
		require.False(t, it.Valid(), name)
		errs["NewIterator"] = it.Err()
		errs["Commit"] = tx.Commit()
		errs["Rollback"] = tx.Rollback()
		for m, err := range errs {
			if !errors.Is(err, db.ErrClosed) {
				t.Errorf("%s: %s: %v, want ErrClosed", name, m, err)
			}
		}
	}

	ran := false
	require.ErrorIs(t, d.Update(func(*db.Transaction) error { ran = true; return nil }), db.ErrClosed)
	require.ErrorIs(t, d.View(func(*db.Transaction) error { ran = true; return nil }), db.ErrClosed)
	require.False(t, ran, "fn ran on a closed database")

	_, err = batch.Get([]byte("b"))
	require.ErrorIs(t, err, db.ErrClosed, "indexed batch Get")
	it := batch.NewIterator(nil)
	it.SeekToFirst()
	require.False(t, it.Valid())
	require.ErrorIs(t, it.Err(), db.ErrClosed, "indexed batch iterator")
	_ = it.Close()
	_, err = d.NewIndexedBatch().Get([]byte("k"))
	require.ErrorIs(t, err, db.ErrClosed, "indexed batch made after Close")
}

// The column-family variants conflict and lock per family: GetForUpdateCF
// and DeleteCF make the key of their family a conflict key (not the same
// key of another family), and in a pessimistic transaction lock it.
func TestTransactionFamilyVariantsConflictAndLock(t *testing.T) {
	d := openMerge(t)
	cf, err := d.CreateColumnFamily("accounts", nil)
	require.NoError(t, err)
	k := []byte("k")
	for _, m := range txnModes {
		for name, op := range map[string]func(*db.Transaction) error{
			"GetForUpdateCF": func(tx *db.Transaction) error { _, err := tx.GetForUpdateCF(cf, k); return ignoreNotFound(err) },
			"DeleteCF":       func(tx *db.Transaction) error { return tx.DeleteCF(cf, k) },
		} {
			// The same key in the default family: no conflict.
			tx := d.NewTransaction(&m.opts)
			require.NoError(t, op(tx))
			require.NoError(t, d.Put(k, []byte("o"), nil))
			require.NoError(t, tx.Commit(), "%s %s", m.name, name)
			// In its own family: a conflict.
			tx = d.NewTransaction(&m.opts)
			require.NoError(t, op(tx))
			require.NoError(t, cf.Put(k, []byte("o"), nil))
			require.ErrorIs(t, tx.Commit(), db.ErrConflict, "%s %s", m.name, name)

			if !m.opts.Pessimistic {
				continue
			}
			tx = d.NewTransaction(&m.opts)
			require.NoError(t, op(tx))
			short := m.opts
			short.LockTimeout = 20 * time.Millisecond
			other := d.NewTransaction(&short)
			require.NoError(t, other.Put(k, []byte("x")), "%s %s: the default family's k is not locked", m.name, name)
			require.ErrorIs(t, other.PutCF(cf, k, []byte("x")), db.ErrConflict, "%s %s: locked", m.name, name)
			require.NoError(t, tx.Rollback())
			require.NoError(t, other.PutCF(cf, k, []byte("x")), "%s %s: released by Rollback", m.name, name)
			require.NoError(t, other.Rollback())
		}
	}
}

// LockTimeout 0 is the default, 1 s: a wait on a held lock fails after
// about that long, not at once and not never.
func TestTransactionLockTimeoutDefault(t *testing.T) {
	d := openMerge(t)
	holder := d.NewTransaction(&db.TransactionOptions{Pessimistic: true})
	put(t, holder, "k", "1")
	waiter := d.NewTransaction(&db.TransactionOptions{Pessimistic: true})
	start := time.Now()
	require.ErrorIs(t, waiter.Put([]byte("k"), []byte("2")), db.ErrConflict)
	waited := time.Since(start)
	require.GreaterOrEqual(t, waited, time.Second)
	require.Less(t, waited, 10*time.Second)
	require.NoError(t, holder.Rollback())
	require.NoError(t, waiter.Rollback())
}

// A deadlock's victim stays open: it keeps its writes and its locks (the
// other transaction still waits) until it rolls back.
func TestTransactionDeadlockVictimStaysOpen(t *testing.T) {
	d := openMerge(t)
	_, t1, t2, done := halfDeadlock(t, d)
	require.ErrorIs(t, t2.Put([]byte("a"), []byte("2")), db.ErrConflict)
	// t2 still holds b: t1 is still waiting.
	select {
	case err := <-done:
		t.Fatalf("t1 got b while t2 held it: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	require.Equal(t, "2", get(t, t2, "b"), "the victim keeps its writes")
	require.NoError(t, t2.Rollback())
	require.NoError(t, <-done)
	require.NoError(t, t1.Commit())
}

// A committed transaction is one plain write batch in the WAL, as RocksDB's
// ldb reads it: dump_wal shows one batch holding every write of the
// transaction (both families) and nothing of a rolled back or failed one,
// and ldb scan of a copy taken before Close (the WAL not yet flushed)
// replays it.
func TestTransactionWALReadByLDB(t *testing.T) {
	ldb, err := exec.LookPath("ldb")
	if err != nil {
		t.Skip("ldb not installed (CI installs rocksdb-tools)")
	}
	dir := filepath.Join(t.TempDir(), "db")
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, MergeOperator: db.NewStringAppendOperator(",")})
	require.NoError(t, err)
	defer d.Close()
	cf, err := d.CreateColumnFamily("other", nil)
	require.NoError(t, err)
	require.NoError(t, d.Put([]byte("gone"), []byte("x"), nil))

	rolled := d.NewTransaction(nil)
	put(t, rolled, "rolled-back", "x")
	require.NoError(t, rolled.Rollback())
	failed := d.NewTransaction(nil)
	put(t, failed, "gone", "failed")
	put(t, failed, "failed", "x")
	require.NoError(t, d.Put([]byte("gone"), []byte("y"), nil))
	require.ErrorIs(t, failed.Commit(), db.ErrConflict)

	tx := d.NewTransaction(&db.TransactionOptions{Pessimistic: true, Isolation: db.Serializable})
	put(t, tx, "t1", "v1")
	require.NoError(t, tx.Merge([]byte("t2"), []byte("m")))
	require.NoError(t, tx.Delete([]byte("gone")))
	require.NoError(t, tx.PutCF(cf, []byte("t3"), []byte("v3")))
	require.NoError(t, tx.Commit())

	crashed := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, os.CopyFS(crashed, os.DirFS(dir)))
	logs, err := filepath.Glob(filepath.Join(crashed, "*.log"))
	require.NoError(t, err)
	var dump strings.Builder
	for _, l := range logs {
		out, err := exec.Command(ldb, "dump_wal", "--walfile="+l, "--print_value").CombinedOutput()
		require.NoError(t, err, "%s", out)
		dump.Write(out)
	}
	var txLines []string
	for _, line := range strings.Split(dump.String(), "\n") {
		require.NotContains(t, line, "0x726F6C6C65642D6261636B", "rolled-back")
		require.NotContains(t, line, "0x6661696C6564", "failed")
		if strings.Contains(line, "0x7431 ") || strings.Contains(line, "0x7433 ") {
			txLines = append(txLines, line)
		}
	}
	require.Len(t, txLines, 1, "one batch:\n%s", dump.String())
	for _, want := range []string{"PUT(0) : 0x7431 : 0x7631", "MERGE(0) : 0x7432 : 0x6D", "DELETE(0) : 0x676F6E65",
		"PUT(" + strconv.Itoa(int(cf.ID())) + ") : 0x7433 : 0x7633"} {
		require.Contains(t, txLines[0], want)
	}
	// seq,count,size,offset,records
	require.Equal(t, "4", strings.Split(txLines[0], ",")[1], "a batch of 4 records: %s", txLines[0])

	require.NoError(t, os.Remove(filepath.Join(crashed, "LOCK")))
	out, err := exec.Command(ldb, "--db="+crashed, "scan").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "t1 : v1\nt2 : m\n", string(out), "gone deleted by the transaction")
	out, err = exec.Command(ldb, "--db="+crashed, "--column_family=other", "scan").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "t3 : v3\n", string(out))
}
