package db

// setBackgroundError records the first error that makes further writes
// unsafe. Reads keep working.
func (d *DB) setBackgroundError(err error) {
	d.mu.Lock()
	d.setBgErrLocked(err)
	d.mu.cond.Broadcast()
	d.mu.Unlock()
}

// setBgErrLocked records err as the background error unless one is set.
// d.mu must be held.
func (d *DB) setBgErrLocked(err error) {
	if d.mu.bgErr == nil {
		d.mu.bgErr = err
		d.roomFree.Store(false)
		d.evBackgroundError(err)
	}
}
