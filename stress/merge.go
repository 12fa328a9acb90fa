package stress

import (
	"github.com/stratadb/strata/db"
)

// ConcatMergeOperator is the stress DB's merge operator: a merge appends
// its operand to the value. Operands are values made by Value, so a merged
// value is a sequence of (key, version) values that DecodeValues splits and
// the oracle checks against the key's history (Oracle.CheckMerged).
type ConcatMergeOperator struct{}

var _ db.MergeOperator = ConcatMergeOperator{}

// Name implements db.MergeOperator.
func (ConcatMergeOperator) Name() string { return "strata.stress.ConcatMergeOperator" }

// FullMerge implements db.MergeOperator.
func (ConcatMergeOperator) FullMerge(_, existing []byte, operands [][]byte) ([]byte, error) {
	n := len(existing)
	for _, o := range operands {
		n += len(o)
	}
	out := make([]byte, 0, n)
	out = append(out, existing...)
	for _, o := range operands {
		out = append(out, o...)
	}
	return out, nil
}

// PartialMerge implements db.MergeOperator.
func (c ConcatMergeOperator) PartialMerge(key []byte, operands [][]byte) ([]byte, bool) {
	b, _ := c.FullMerge(key, nil, operands)
	return b, true
}
