package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/stratadb/strata/table"
)

// predefined are the properties RocksDB 7.8.3 reads into TableProperties
// fields; every other entry is "user collected" and printed raw, in hex.
// rocksdb.deleted.keys and rocksdb.merge.operands are both: RocksDB keeps
// them among the user-collected properties for compatibility.
var predefined = map[string]bool{
	"rocksdb.data.size": true, "rocksdb.index.size": true, "rocksdb.index.partitions": true,
	"rocksdb.top-level.index.size": true, "rocksdb.index.key.is.user.key": true,
	"rocksdb.index.value.is.delta.encoded": true, "rocksdb.filter.size": true,
	"rocksdb.raw.key.size": true, "rocksdb.raw.value.size": true, "rocksdb.num.data.blocks": true,
	"rocksdb.num.entries": true, "rocksdb.num.filter_entries": true,
	"rocksdb.num.range-deletions": true, "rocksdb.format.version": true,
	"rocksdb.fixed.key.length": true, "rocksdb.column.family.id": true,
	"rocksdb.creation.time": true, "rocksdb.oldest.key.time": true,
	"rocksdb.file.creation.time": true, "rocksdb.original.file.number": true,
	"rocksdb.sample_for_compression.slow.data.size": true,
	"rocksdb.sample_for_compression.fast.data.size": true, "rocksdb.column.family.name": true,
	"rocksdb.comparator": true, "rocksdb.merge.operator": true,
	"rocksdb.prefix.extractor.name": true, "rocksdb.filter.policy": true,
	"rocksdb.property.collectors": true, "rocksdb.compression": true,
	"rocksdb.compression_options": true, "rocksdb.creating.db.identity": true,
	"rocksdb.creating.session.identity": true, "rocksdb.creating.host.identity": true,
	"rocksdb.seqno.time.map": true,
}

// unknownColumnFamily is RocksDB's kUnknownColumnFamily (printed "N/A").
const unknownColumnFamily = 0x7fffffff

func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// rawUint decodes a varint property table.Properties has no field for.
func rawUint(p *table.Properties, name string) uint64 {
	for _, e := range p.Raw {
		if e.Name == name {
			v, _ := binary.Uvarint(e.Value)
			return v
		}
	}
	return 0
}

func average(total, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(total) / float64(n)
}

// writeProperties prints p as sst_dump --show_properties does (less the
// unique ID), then the footer facts sst_dump does not show.
func writeProperties(w io.Writer, p *table.Properties) {
	var b strings.Builder
	line := func(name string, v interface{}) { fmt.Fprintf(&b, "  %s: %v\n", name, v) }
	b.WriteString("Table Properties:\n------------------------------\n")
	line("# data blocks", p.NumDataBlocks)
	line("# entries", p.NumEntries)
	line("# deletions", p.NumDeletions)
	line("# merge operands", p.NumMergeOperands)
	line("# range deletions", p.NumRangeDeletions)
	line("raw key size", p.RawKeySize)
	line("raw average key size", fmt.Sprintf("%f", average(p.RawKeySize, p.NumEntries)))
	line("raw value size", p.RawValueSize)
	line("raw average value size", fmt.Sprintf("%f", average(p.RawValueSize, p.NumEntries)))
	line("data block size", p.DataSize)
	line(fmt.Sprintf("index block size (user-key? %d, delta-value? %d)",
		bit(p.IndexKeyIsUserKey), bit(p.IndexValueIsDeltaEncoded)), p.IndexSize)
	if p.IndexPartitions != 0 {
		line("# index partitions", p.IndexPartitions)
		line("top-level index size", p.TopLevelIndexSize)
	}
	line("filter block size", p.FilterSize)
	line("# entries for filter", p.NumFilterEntries)
	line("(estimated) table size", p.DataSize+p.IndexSize+p.FilterSize)
	line("filter policy name", orNA(p.FilterPolicy))
	line("prefix extractor name", orNA(p.PrefixExtractorName))
	cf := fmt.Sprint(p.ColumnFamilyID)
	if p.ColumnFamilyID == unknownColumnFamily {
		cf = "N/A"
	}
	line("column family ID", cf)
	line("column family name", orNA(p.ColumnFamilyName))
	line("comparator name", orNA(p.ComparatorName))
	line("merge operator name", orNA(p.MergeOperatorName))
	line("property collectors names", orNA(p.PropertyCollectors))
	line("SST file compression algo", orNA(p.CompressionName))
	line("SST file compression options", orNA(p.CompressionOptions))
	line("creation time", p.CreationTime)
	line("time stamp of earliest key", p.OldestKeyTime)
	line("file creation time", p.FileCreationTime)
	line("slow compression estimated data size", rawUint(p, "rocksdb.sample_for_compression.slow.data.size"))
	line("fast compression estimated data size", rawUint(p, "rocksdb.sample_for_compression.fast.data.size"))
	line("DB identity", p.DBIdentity)
	line("DB session identity", p.DBSessionID)
	line("DB host id", p.DBHostID)
	line("original file number", p.OriginalFileNumber)
	b.WriteString("  Sequence number to time mapping: \n")
	b.WriteString("  Raw user collected properties\n------------------------------\n")
	for _, e := range p.Raw {
		if !predefined[e.Name] || e.Name == "rocksdb.deleted.keys" || e.Name == "rocksdb.merge.operands" {
			fmt.Fprintf(&b, "  # %s: 0x%X\n", e.Name, e.Value)
		}
	}
	b.WriteString("Footer\n------------------------------\n")
	line("format version", p.FormatVersion)
	line("checksum type", p.ChecksumType)
	io.WriteString(w, b.String())
}

func bit(v bool) int {
	if v {
		return 1
	}
	return 0
}
