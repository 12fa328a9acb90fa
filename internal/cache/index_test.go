package cache

// find returns the value linked under k without taking a reference.
func (ix *index) find(k key) *value {
	for i := indexHash(k) & ix.mask; ; i = (i + 1) & ix.mask {
		v := ix.slots[i].Load()
		if v == nil {
			return nil
		}
		if v != tombstone && v.key == k {
			return v
		}
	}
}
