package table

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
)

// Property names (§12). They reach disk: do not change.
const (
	propDataSize           = "rocksdb.data.size"
	propIndexSize          = "rocksdb.index.size"
	propIndexPartitions    = "rocksdb.index.partitions"
	propTopLevelIndexSize  = "rocksdb.top-level.index.size"
	propIndexKeyIsUserKey  = "rocksdb.index.key.is.user.key"
	propIndexValueIsDelta  = "rocksdb.index.value.is.delta.encoded"
	propFilterSize         = "rocksdb.filter.size"
	propRawKeySize         = "rocksdb.raw.key.size"
	propRawValueSize       = "rocksdb.raw.value.size"
	propNumDataBlocks      = "rocksdb.num.data.blocks"
	propNumEntries         = "rocksdb.num.entries"
	propNumFilterEntries   = "rocksdb.num.filter_entries"
	propDeletedKeys        = "rocksdb.deleted.keys"
	propMergeOperands      = "rocksdb.merge.operands"
	propNumRangeDeletions  = "rocksdb.num.range-deletions"
	propFormatVersion      = "rocksdb.format.version"
	propFixedKeyLen        = "rocksdb.fixed.key.length"
	propColumnFamilyID     = "rocksdb.column.family.id"
	propCreationTime       = "rocksdb.creation.time"
	propOldestKeyTime      = "rocksdb.oldest.key.time"
	propFileCreationTime   = "rocksdb.file.creation.time"
	propOriginalFileNumber = "rocksdb.original.file.number"
	propColumnFamilyName   = "rocksdb.column.family.name"
	propComparator         = "rocksdb.comparator"
	propMergeOperator      = "rocksdb.merge.operator"
	propPrefixExtractor    = "rocksdb.prefix.extractor.name"
	propFilterPolicy       = "rocksdb.filter.policy"
	propCollectors         = "rocksdb.property.collectors"
	propCompression        = "rocksdb.compression"
	propCompressionOptions = "rocksdb.compression_options"
	propDBIdentity         = "rocksdb.creating.db.identity"
	propDBSessionID        = "rocksdb.creating.session.identity"
	propDBHostID           = "rocksdb.creating.host.identity"
	propIndexType          = "rocksdb.block.based.table.index.type"
	propWholeKeyFiltering  = "rocksdb.block.based.table.whole.key.filtering"
	propPrefixFiltering    = "rocksdb.block.based.table.prefix.filtering"
	propExternalVersion    = "rocksdb.external_sst_file.version"
	propGlobalSeqNo        = "rocksdb.external_sst_file.global_seqno"
)

// Index types (rocksdb.block.based.table.index.type). Do not change.
const (
	IndexBinarySearch             = 0
	IndexHashSearch               = 1
	IndexTwoLevelSearch           = 2
	IndexBinarySearchWithFirstKey = 3
)

// Properties are a table's properties block plus its footer facts.
type Properties struct {
	DataSize, IndexSize, IndexPartitions, TopLevelIndexSize, FilterSize uint64
	RawKeySize, RawValueSize                                            uint64
	NumDataBlocks, NumEntries, NumFilterEntries                         uint64
	NumDeletions, NumMergeOperands, NumRangeDeletions                   uint64
	FixedKeyLength, ColumnFamilyID                                      uint64
	CreationTime, OldestKeyTime, FileCreationTime, OriginalFileNumber   uint64
	// PropFormatVersion is rocksdb.format.version, always 0 for
	// block-based tables; FormatVersion is the footer's.
	PropFormatVersion uint64
	FormatVersion     uint32
	ChecksumType      ChecksumType

	ColumnFamilyName, ComparatorName, MergeOperatorName   string
	PrefixExtractorName, FilterPolicy, PropertyCollectors string
	CompressionName, CompressionOptions                   string
	DBIdentity, DBSessionID, DBHostID                     string

	IndexType                          uint32
	IndexKeyIsUserKey                  bool
	IndexValueIsDeltaEncoded           bool
	WholeKeyFiltering, PrefixFiltering bool
	ExternalSSTVersion                 uint32
	GlobalSeqNo                        uint64
	HasGlobalSeqNo, HasCompressionName bool

	// UserProperties are the entries this package does not know.
	UserProperties map[string]string
	// Raw lists every stored entry in file order (sorted by name).
	Raw []Property
}

// Property is one raw properties-block entry.
type Property struct {
	Name  string
	Value []byte
}

// String lists the properties one per line, name-ordered, with integers
// decoded and other values quoted.
func (p *Properties) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "footer.format_version: %d\nfooter.checksum: %s\n", p.FormatVersion, p.ChecksumType)
	for _, e := range p.Raw {
		if _, ok := uintProps[e.Name]; ok {
			v, _ := binary.Uvarint(e.Value)
			fmt.Fprintf(&b, "%s: %d\n", e.Name, v)
		} else {
			fmt.Fprintf(&b, "%s: %q\n", e.Name, e.Value)
		}
	}
	return b.String()
}

// uintProps maps varint-valued properties to their field.
var uintProps = map[string]func(*Properties) *uint64{
	propDataSize:           func(p *Properties) *uint64 { return &p.DataSize },
	propIndexSize:          func(p *Properties) *uint64 { return &p.IndexSize },
	propIndexPartitions:    func(p *Properties) *uint64 { return &p.IndexPartitions },
	propTopLevelIndexSize:  func(p *Properties) *uint64 { return &p.TopLevelIndexSize },
	propFilterSize:         func(p *Properties) *uint64 { return &p.FilterSize },
	propRawKeySize:         func(p *Properties) *uint64 { return &p.RawKeySize },
	propRawValueSize:       func(p *Properties) *uint64 { return &p.RawValueSize },
	propNumDataBlocks:      func(p *Properties) *uint64 { return &p.NumDataBlocks },
	propNumEntries:         func(p *Properties) *uint64 { return &p.NumEntries },
	propNumFilterEntries:   func(p *Properties) *uint64 { return &p.NumFilterEntries },
	propDeletedKeys:        func(p *Properties) *uint64 { return &p.NumDeletions },
	propMergeOperands:      func(p *Properties) *uint64 { return &p.NumMergeOperands },
	propNumRangeDeletions:  func(p *Properties) *uint64 { return &p.NumRangeDeletions },
	propFormatVersion:      func(p *Properties) *uint64 { return &p.PropFormatVersion },
	propFixedKeyLen:        func(p *Properties) *uint64 { return &p.FixedKeyLength },
	propColumnFamilyID:     func(p *Properties) *uint64 { return &p.ColumnFamilyID },
	propCreationTime:       func(p *Properties) *uint64 { return &p.CreationTime },
	propOldestKeyTime:      func(p *Properties) *uint64 { return &p.OldestKeyTime },
	propFileCreationTime:   func(p *Properties) *uint64 { return &p.FileCreationTime },
	propOriginalFileNumber: func(p *Properties) *uint64 { return &p.OriginalFileNumber },
}

var stringProps = map[string]func(*Properties) *string{
	propColumnFamilyName:   func(p *Properties) *string { return &p.ColumnFamilyName },
	propComparator:         func(p *Properties) *string { return &p.ComparatorName },
	propMergeOperator:      func(p *Properties) *string { return &p.MergeOperatorName },
	propPrefixExtractor:    func(p *Properties) *string { return &p.PrefixExtractorName },
	propFilterPolicy:       func(p *Properties) *string { return &p.FilterPolicy },
	propCollectors:         func(p *Properties) *string { return &p.PropertyCollectors },
	propCompression:        func(p *Properties) *string { return &p.CompressionName },
	propCompressionOptions: func(p *Properties) *string { return &p.CompressionOptions },
	propDBIdentity:         func(p *Properties) *string { return &p.DBIdentity },
	propDBSessionID:        func(p *Properties) *string { return &p.DBSessionID },
	propDBHostID:           func(p *Properties) *string { return &p.DBHostID },
}

// set decodes one entry; it returns false for a malformed known value.
func (p *Properties) set(name string, v []byte) bool {
	p.Raw = append(p.Raw, Property{Name: name, Value: v})
	if f, ok := uintProps[name]; ok {
		x, n := binary.Uvarint(v)
		*f(p) = x
		return n > 0
	}
	if f, ok := stringProps[name]; ok {
		*f(p) = string(v)
		if name == propCompression {
			p.HasCompressionName = true
		}
		return true
	}
	switch name {
	case propIndexKeyIsUserKey, propIndexValueIsDelta:
		x, n := binary.Uvarint(v)
		if name == propIndexKeyIsUserKey {
			p.IndexKeyIsUserKey = x != 0
		} else {
			p.IndexValueIsDeltaEncoded = x != 0
		}
		return n > 0
	case propIndexType, propExternalVersion:
		if len(v) != 4 {
			return false
		}
		if name == propIndexType {
			p.IndexType = binary.LittleEndian.Uint32(v)
		} else {
			p.ExternalSSTVersion = binary.LittleEndian.Uint32(v)
		}
		return true
	case propGlobalSeqNo:
		if len(v) != 8 {
			return false
		}
		p.GlobalSeqNo, p.HasGlobalSeqNo = binary.LittleEndian.Uint64(v), true
		return true
	case propWholeKeyFiltering:
		p.WholeKeyFiltering = string(v) == "1"
		return true
	case propPrefixFiltering:
		p.PrefixFiltering = string(v) == "1"
		return true
	}
	if p.UserProperties == nil {
		p.UserProperties = make(map[string]string)
	}
	p.UserProperties[name] = string(v)
	return true
}

// decodeProperties parses a properties block. It returns a description of
// the problem on failure.
func decodeProperties(block []byte) (*Properties, string) {
	var it blockIter
	if !it.init(block, bytes.Compare) {
		return nil, "bad properties block"
	}
	p := &Properties{}
	var last []byte
	for ok := it.first(); ok; ok = it.next() {
		if last != nil && bytes.Compare(last, it.key) >= 0 {
			return nil, "properties unsorted"
		}
		last = append(last[:0], it.key...)
		if !p.set(string(it.key), bytes.Clone(it.value())) {
			return nil, "bad value of property " + string(it.key)
		}
	}
	if it.corrupt {
		return nil, "bad properties block"
	}
	return p, ""
}

// encodeProperties builds the properties block: entries sorted by name.
func encodeProperties(props []Property) []byte {
	sort.Slice(props, func(i, j int) bool { return props[i].Name < props[j].Name })
	bw := blockWriter{restartInterval: propertiesRestartInterval}
	for _, e := range props {
		bw.add([]byte(e.Name), e.Value)
	}
	return bw.finish()
}
