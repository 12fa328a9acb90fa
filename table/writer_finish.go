package table

import (
	"encoding/binary"
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// compressionOptionsString is what RocksDB 7.8.3 records for default
// compression options.
const compressionOptionsString = "window_bits=-14; level=32767; strategy=0; max_dict_bytes=0; " +
	"zstd_max_train_bytes=0; enabled=0; max_dict_buffer_bytes=0; use_zstd_dict_trainer=1; "

// Finish writes the remaining data, the filter, index, range-deletion,
// properties and metaindex blocks and the footer. It neither syncs nor
// closes the underlying file. The Writer may not be used afterwards.
func (w *Writer) Finish() (*WriterMetadata, error) {
	if w.err != nil {
		return nil, w.err
	}
	if !w.data.empty() {
		if err := w.flushData(); err != nil {
			return nil, err
		}
	}
	if w.pending {
		last, _ := base.DecodeInternalKey(w.blockLastUK)
		sep := last.Append(nil)
		// A user comparer's Successor shortens the last index key, under
		// the same rule as separators (bytewise keeps the full key).
		if w.cmp.Successor != nil && !w.cmp.Bytewise {
			w.sepBuf = w.cmp.Successor(w.sepBuf[:0], last.UserKey)
			if len(w.sepBuf) <= len(last.UserKey) && w.cmp.Compare(last.UserKey, w.sepBuf) < 0 {
				sep = base.MakeInternalKey(w.sepBuf, base.MaxSeqNum, base.KindSeek).Append(nil)
			}
		}
		w.index = append(w.index, indexEntry{sep: sep, handle: w.pendingH})
		w.pending = false
		if w.part != nil {
			w.part.added(w)
			w.part.cut(len(w.index))
		}
	}
	var metas []Property
	addMeta := func(name string, h blockHandle) {
		metas = append(metas, Property{Name: name, Value: h.append(nil)})
	}
	if w.part != nil && w.part.filters {
		h, ok, err := w.writePartitionedFilter()
		if err != nil {
			return nil, err
		}
		if ok {
			addMeta(partFilterPrefix+builtinFilterName, h)
		}
	} else if w.filter != nil && w.filter.NumEntries() > 0 {
		w.props.NumFilterEntries = uint64(w.filter.NumEntries())
		fb := w.filter.Finish()
		w.filter.Release()
		h, err := w.writeBlock(fb, NoCompression)
		if err != nil {
			return nil, err
		}
		w.props.FilterSize = uint64(len(fb))
		addMeta(fullFilterPrefix+builtinFilterName, h)
	}
	indexH, err := w.writeIndex()
	if err != nil {
		return nil, err
	}
	if len(w.tombstones) > 0 {
		h, err := w.writeRangeDels()
		if err != nil {
			return nil, err
		}
		addMeta(metaRangeDel, h)
	}
	h, err := w.writeBlock(encodeProperties(w.propertyList()), NoCompression)
	if err != nil {
		return nil, err
	}
	addMeta(metaProperties, h)
	metaH, err := w.writeBlock(encodeSorted(metas, 1), NoCompression)
	if err != nil {
		return nil, err
	}
	ft := appendFooter(nil, footer{formatVersion: w.opts.FormatVersion, checksum: w.opts.Checksum,
		metaindex: metaH, index: indexH})
	if err := w.write(ft); err != nil {
		return nil, err
	}
	w.meta.Size = w.offset
	w.setBounds()
	w.err = base.AssertionFailedf("table: Writer used after Finish")
	m := w.meta
	return &m, nil
}

func encodeSorted(entries []Property, restartInterval int) []byte {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	bw := blockWriter{restartInterval: restartInterval}
	for _, e := range entries {
		bw.add([]byte(e.Name), e.Value)
	}
	return bw.finish()
}

// writeIndex writes the index block: user-key separators when allowed,
// delta-form entries (no value_len) from fv 4 on, restart interval 1.
func (w *Writer) writeIndex() (blockHandle, error) {
	if w.part != nil {
		return w.writeTwoLevelIndex()
	}
	bw := blockWriter{restartInterval: 1, noValueLen: w.opts.FormatVersion >= 4}
	var val []byte
	for _, e := range w.index {
		key := e.sep
		if w.userKeyIndex {
			key = key[:len(key)-base.TrailerLen]
		}
		val = e.handle.append(val[:0])
		bw.add(key, val)
	}
	raw := bw.finish()
	// As RocksDB: the uncompressed size, plus one trailer.
	w.props.IndexSize = uint64(len(raw)) + blockTrailerLen
	return w.writeBlock(raw, w.opts.Compression)
}

func (w *Writer) writeRangeDels() (blockHandle, error) {
	ts := w.tombstones
	sort.Slice(ts, func(i, j int) bool {
		if c := w.cmp.CompareUser(ts[i].Start, ts[j].Start); c != 0 {
			return c < 0
		}
		if ts[i].Seq != ts[j].Seq {
			return ts[i].Seq > ts[j].Seq
		}
		return w.cmp.CompareUser(ts[i].End, ts[j].End) > 0
	})
	bw := blockWriter{restartInterval: 1}
	var key []byte
	for i, t := range ts {
		k := base.MakeInternalKey(t.Start, t.Seq, base.KindRangeDelete)
		if i > 0 && w.cmp.CompareUser(ts[i-1].Start, t.Start) == 0 && ts[i-1].Seq == t.Seq {
			// Identical internal keys cannot both be stored; the wider
			// tombstone subsumes the narrower one.
			continue
		}
		key = k.Append(key[:0])
		w.props.RawKeySize += uint64(len(key))
		w.props.RawValueSize += uint64(len(t.End))
		bw.add(key, t.End)
	}
	return w.writeBlock(bw.finish(), NoCompression)
}

func (w *Writer) setBounds() {
	m := &w.meta
	if m.HasPointKeys {
		last, _ := base.DecodeInternalKey(w.lastKey)
		m.Largest = last.Clone()
	}
	for i, t := range w.tombstones {
		lo := base.MakeInternalKey(t.Start, t.Seq, base.KindRangeDelete)
		hi := base.MakeInternalKey(t.End, base.MaxSeqNum, base.KindRangeDelete)
		if (!m.HasPointKeys && i == 0) || w.cmp.InternalCompare(lo, m.Smallest) < 0 {
			m.Smallest = lo.Clone()
		}
		if (!m.HasPointKeys && i == 0) || w.cmp.InternalCompare(hi, m.Largest) > 0 {
			m.Largest = hi.Clone()
		}
	}
}

func (w *Writer) propertyList() []Property {
	o := &w.opts
	p := &w.props
	var out []Property
	u := func(name string, v uint64) {
		out = append(out, Property{Name: name, Value: binary.AppendUvarint(nil, v)})
	}
	s := func(name, v string) { out = append(out, Property{Name: name, Value: []byte(v)}) }
	b := func(name string, v bool) {
		if v {
			s(name, "1")
		} else {
			s(name, "0")
		}
	}
	flag := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	u(propDataSize, p.DataSize)
	u(propIndexSize, p.IndexSize)
	u(propIndexKeyIsUserKey, flag(w.userKeyIndex))
	u(propIndexValueIsDelta, flag(o.FormatVersion >= 4))
	u(propFilterSize, p.FilterSize)
	u(propRawKeySize, p.RawKeySize)
	u(propRawValueSize, p.RawValueSize)
	u(propNumDataBlocks, p.NumDataBlocks)
	u(propNumEntries, w.meta.NumEntries+w.meta.NumRangeDeletions)
	u(propNumFilterEntries, p.NumFilterEntries)
	u(propDeletedKeys, w.meta.NumDeletions)
	u(propMergeOperands, p.NumMergeOperands)
	u(propNumRangeDeletions, w.meta.NumRangeDeletions)
	u(propFormatVersion, 0)
	u(propFixedKeyLen, 0)
	u(propColumnFamilyID, uint64(o.ColumnFamilyID))
	u(propCreationTime, uint64(o.CreationTime))
	u(propOldestKeyTime, uint64(o.OldestKeyTime))
	if o.FileCreationTime > 0 {
		u(propFileCreationTime, uint64(o.FileCreationTime))
	}
	u(propOriginalFileNumber, o.FileNumber)
	s(propColumnFamilyName, o.ColumnFamilyName)
	s(propComparator, w.cmp.Name)
	s(propMergeOperator, orNullptr(o.MergeOperatorName))
	pe := "nullptr"
	if o.PrefixExtractor != nil {
		pe = o.PrefixExtractor.Name()
	}
	s(propPrefixExtractor, pe)
	if w.filter != nil {
		s(propFilterPolicy, "bloomfilter")
	}
	s(propCollectors, "[]")
	s(propCompression, o.Compression.String())
	s(propCompressionOptions, compressionOptionsString)
	s(propDBIdentity, o.DBIdentity)
	s(propDBSessionID, o.DBSessionID)
	s(propDBHostID, o.HostIdentity)
	out = w.appendIndexTypeProps(out)
	b(propWholeKeyFiltering, o.WholeKeyFiltering)
	b(propPrefixFiltering, o.PrefixExtractor != nil)
	if w.external {
		out = append(out,
			Property{Name: propExternalVersion, Value: binary.LittleEndian.AppendUint32(nil, ExternalFileVersion)},
			Property{Name: propGlobalSeqNo, Value: binary.LittleEndian.AppendUint64(nil, 0)})
	}
	return out
}

func orNullptr(s string) string {
	if s == "" {
		return "nullptr"
	}
	return s
}
