package stress

import (
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/testutil"
	"github.com/stretchr/testify/require"
)

func TestMetamorphic(t *testing.T) {
	seeds, ops := 3, 1500
	if testutil.Long() {
		seeds, ops = 20, 4000
	}
	for s := 1; s <= seeds; s++ {
		require.NoError(t, RunMetamorphic(MetaConfig{Seed: int64(s), Ops: ops}))
	}
}

// TestMetamorphicSequenceIsNotVacuous checks that a sequence exercises
// every kind of operation and that its reads find data, so agreement
// between configurations means something.
func TestMetamorphicSequenceIsNotVacuous(t *testing.T) {
	ops := GenerateMetaOps(1, 1500)
	kinds := map[metaKind]int{}
	for _, op := range ops {
		kinds[op.kind]++
	}
	for k := metaPut; k <= metaReopen; k++ {
		require.Positive(t, kinds[k], "kind %d never generated", k)
	}
	out, err := RunMetaVariant(MetaVariants[2], ops) // tiny
	require.NoError(t, err)
	require.Len(t, out, len(ops))
	found, scanned, errs := 0, 0, 0
	for i, line := range out {
		switch ops[i].kind {
		case metaGet:
			if strings.HasPrefix(line, "v") {
				found++
			}
		case metaScan:
			if line != "" {
				scanned++
			}
		}
		if strings.Contains(line, "error") || strings.Contains(line, "bad") {
			errs++
		}
	}
	require.Zero(t, errs)
	require.Greater(t, found, kinds[metaGet]/10)
	require.Greater(t, scanned, kinds[metaScan]/4)
}

// TestMetamorphicReportsFirstDifference tampers with one result of a
// second configuration and requires the comparison to name the op, both
// configurations and the seed.
func TestMetamorphicReportsFirstDifference(t *testing.T) {
	ops := GenerateMetaOps(7, 300)
	vs := MetaVariants[1:3]
	a, err := RunMetaVariant(vs[0], ops)
	require.NoError(t, err)
	b, err := RunMetaVariant(vs[1], ops)
	require.NoError(t, err)
	require.NoError(t, compareMeta(7, ops, vs, [][]string{a, b}))
	i := -1
	for j := range ops {
		if ops[j].kind == metaGet {
			i = j
			break
		}
	}
	require.GreaterOrEqual(t, i, 0)
	b[i] = "v999999"
	err = compareMeta(7, ops, vs, [][]string{a, b})
	require.True(t, errors.Is(err, ErrMetamorphic), "%v", err)
	msg := err.Error()
	require.Contains(t, msg, "seed 7")
	require.Contains(t, msg, "op "+strconv.Itoa(i)+" ")
	require.Contains(t, msg, vs[0].Name+"{")
	require.Contains(t, msg, vs[1].Name+"{")
	require.Contains(t, msg, "v999999")
	// A shorter log is a difference too.
	err = compareMeta(7, ops, vs, [][]string{a, a[:10]})
	require.True(t, errors.Is(err, ErrMetamorphic), "%v", err)
}
