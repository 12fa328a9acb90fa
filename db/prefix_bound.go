package db

// PrefixUpperBound returns the smallest key that is greater than every key
// starting with prefix, for ReadOptions.UpperBound: together with
// LowerBound: prefix, an iterator then walks exactly the keys with that
// prefix, with or without a prefix extractor (goleveldb's util.BytesPrefix,
// Badger's prefix iteration). It returns nil, no upper bound, when every
// key after prefix starts with it (prefix empty or all 0xff bytes). The
// result is a new slice.
func PrefixUpperBound(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := make([]byte, i+1)
			copy(end, prefix)
			end[i]++
			return end
		}
	}
	return nil
}
