package db_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/stratadb/strata/db"
)

func TestZZExplore2(t *testing.T) {
	dir := "/tmp/explore/w"
	exec.Command("rm", "-rf", dir).Run()
	d, err := db.Open(dir, &db.Options{CreateIfMissing: true, Compression: db.SnappyCompression, BloomBitsPerKey: 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		d.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d", i)), nil)
	}
	d.Flush()
	d.Delete([]byte("k005"), nil)
	d.DeleteRange([]byte("k010"), []byte("k020"), nil)
	d.Flush()
	d.Put([]byte("zz"), []byte("unflushed"), &db.WriteOptions{Sync: true})
	exec.Command("cp", "-r", dir, dir+"-open").Run()
	t.Log(d.Close())
}
