package db

import (
	"bytes"
	"encoding/binary"
)

// Names of the built-in operators, RocksDB's.
const (
	UInt64AddOperatorName        = "UInt64AddOperator"
	StringAppendOperatorName     = "StringAppendOperator"
	StringAppendTESTOperatorName = "StringAppendTESTOperator"
	MaxOperatorName              = "MaxOperator"
	PutOperatorName              = "PutOperator"
)

// NewUInt64AddOperator returns RocksDB's "uint64add" operator: values and
// operands are 8-byte little-endian unsigned integers, added with
// wrap-around. A value of another length counts as 0, as in RocksDB.
func NewUInt64AddOperator() MergeOperator { return uint64Add{} }

type uint64Add struct{}

func (uint64Add) Name() string { return UInt64AddOperatorName }

// decodeUint64 reads an 8-byte little-endian value; another length counts
// as 0, as in RocksDB.
func decodeUint64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (uint64Add) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	sum := decodeUint64(existing)
	for _, op := range operands {
		sum += decodeUint64(op)
	}
	return binary.LittleEndian.AppendUint64(make([]byte, 0, 8), sum), nil
}

func (u uint64Add) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	v, _ := u.FullMerge(key, nil, operands)
	return v, true
}

// NewStringAppendOperator returns RocksDB's "stringappend" operator: each
// operand is appended to the value, after delim when the value exists.
// RocksDB's default delimiter is ",".
func NewStringAppendOperator(delim string) MergeOperator {
	return &stringAppend{name: StringAppendOperatorName, delim: delim}
}

// NewStringAppendTESTOperator returns RocksDB's "stringappendtest"
// operator (StringAppendTESTOperator): the same values as
// NewStringAppendOperator under another name.
func NewStringAppendTESTOperator(delim string) MergeOperator {
	return &stringAppend{name: StringAppendTESTOperatorName, delim: delim}
}

type stringAppend struct {
	name, delim string
}

func (s *stringAppend) Name() string { return s.name }

func (s *stringAppend) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	n := len(existing)
	for _, op := range operands {
		n += len(s.delim) + len(op)
	}
	v := make([]byte, 0, n)
	first := existing == nil
	v = append(v, existing...)
	for _, op := range operands {
		if !first {
			v = append(v, s.delim...)
		}
		first = false
		v = append(v, op...)
	}
	return v, nil
}

func (s *stringAppend) PartialMerge(_ []byte, operands [][]byte) ([]byte, bool) {
	v, _ := s.FullMerge(nil, nil, operands)
	return v, true
}

// NewMaxOperator returns RocksDB's "max" operator: the bytewise largest of
// the value and the operands.
func NewMaxOperator() MergeOperator {
	return &AssociativeMergeOperator{OperatorName: MaxOperatorName, Merge: func(_, existing, op []byte) []byte {
		if existing != nil && bytes.Compare(existing, op) >= 0 {
			return existing
		}
		return append([]byte{}, op...)
	}}
}

// NewPutOperator returns RocksDB's "put" operator: the newest operand
// replaces the value.
func NewPutOperator() MergeOperator {
	return &AssociativeMergeOperator{OperatorName: PutOperatorName, Merge: func(_, _, op []byte) []byte {
		return append([]byte{}, op...)
	}}
}

// MergeOperatorByName returns the built-in operator RocksDB's db_bench and
// ldb select with name: "uint64add", "stringappend", "stringappendtest",
// "max" or "put"; or with an OPTIONS file's merge_operator value
// ("UInt64AddOperator", "{id=StringAppendOperator;delimiter=,;}", ...). It
// returns nil for "", "nullptr" and names it does not know.
func MergeOperatorByName(name string) MergeOperator {
	id, delim := mergeOperatorID(name)
	switch id {
	case "uint64add", UInt64AddOperatorName:
		return NewUInt64AddOperator()
	case "stringappend", StringAppendOperatorName:
		return NewStringAppendOperator(delim)
	case "stringappendtest", StringAppendTESTOperatorName:
		return NewStringAppendTESTOperator(delim)
	case "max", MaxOperatorName:
		return NewMaxOperator()
	case "put", "put_v1", PutOperatorName, "PutOperatorV2":
		return NewPutOperator()
	}
	return nil
}
