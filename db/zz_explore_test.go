package db_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stratadb/strata/db"
)

func TestZZExplore(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/rocksdb/*/db")
	for _, src := range dirs {
		for _, ro := range []bool{true, false} {
			dst := t.TempDir()
			exec.Command("cp", "-r", src+"/.", dst).Run()
			d, err := db.Open(dst, &db.Options{ReadOnly: ro})
			if err != nil {
				t.Logf("%s ro=%v: open: %v", src, ro, err)
				continue
			}
			h := sha256.New()
			it := d.NewIterator(nil)
			n := 0
			for it.SeekToFirst(); it.Valid(); it.Next() {
				fmt.Fprintf(h, "0x%X : 0x%X\n", it.Key(), it.Value())
				n++
			}
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(src), "ldb-scan-hex.expected"))
			t.Logf("%s ro=%v: n=%d err=%v sha=%x\n%s", src, ro, n, it.Err(), h.Sum(nil), b)
			it.Close()
			t.Log(d.Close())
		}
	}
}
