package stress

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/db"
	"github.com/stratadb/strata/internal/vfs"
)

// crashImage (power-loss mode) takes a crash image of the in-memory file
// system, in which only synced data survives, while the other threads keep
// writing, and checks it: every write acknowledged (with Sync) before the
// image must be in it; writes in flight may or may not be.
func (t *thread) crashImage() {
	r := t.r
	mem, ok := r.cfg.FS.(*vfs.MemFS)
	if !ok {
		r.fail(errors.New("power-loss mode needs the in-memory file system"))
		return
	}
	n := r.oracle.N()
	r.mu.RLock()
	opts, err := r.dbOptions(r.ext)
	names := r.names
	r.mu.RUnlock()
	if err != nil {
		r.fail(err)
		return
	}
	pre := r.oracle.States(0, n)
	img := mem.CrashClone()
	post := r.oracle.States(0, n)
	r.Stats.Images.Add(1)
	opts.FS = img
	d, err := db.Open(r.cfg.Dir, opts)
	if err != nil {
		r.fail(errors.Wrap(err, "power loss: open crash image"))
		return
	}
	defer d.Close()
	cfs, err := handles(d, names)
	if err != nil {
		r.fail(errors.Wrap(err, "power loss: crash image"))
		return
	}
	for i := 0; i < n; i++ {
		v, err := cfs[i/r.cfg.MaxKey].Get(r.key(i), nil)
		found := err == nil
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			r.fail(errors.Wrapf(err, "power loss: get %s of %s from crash image", r.key(i), names[i/r.cfg.MaxKey]))
			return
		}
		if err := r.check(i, pre[i], post[i], found, v, r.cfg.ValueSizeMult); err != nil {
			r.fail(errors.Wrap(err, "power loss: crash image"))
			return
		}
	}
}
