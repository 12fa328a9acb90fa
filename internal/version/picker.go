package version

import (
	"math"
	"sort"

	"github.com/stratadb/strata/internal/base"
)

// PickerOptions are the knobs of leveled compaction picking. The db fills
// them from its (mutable) options for each pick.
type PickerOptions struct {
	// L0Trigger is the number of L0 files at which L0 scores 1.
	L0Trigger int
	// BaseBytes is the target size of L1.
	BaseBytes uint64
	// Multiplier scales each level's target from the one above.
	Multiplier float64
	// Dynamic sizes the levels from the largest one up, as RocksDB's
	// level_compaction_dynamic_level_bytes does (see LevelTargets).
	Dynamic bool
}

// Pick is a compaction chosen by a picker: the files of StartLevel
// (Inputs[0]) and of OutputLevel (Inputs[1]) to merge, the files of the
// level below the output that bound output files (Grandparents), and the
// user-key range [Smallest, Largest] of all inputs.
//
// Invariant: every input file had Compacting unset when picked; the caller
// sets it (under its mutex) before releasing that mutex.
type Pick struct {
	StartLevel, OutputLevel int
	Inputs                  [2][]*FileMetadata
	Grandparents            []*FileMetadata
	Smallest, Largest       []byte
	Score                   float64
}

// Busy reports whether an in-flight compaction writes into level over a
// range that intersects [smallest, largest]: a new compaction into the same
// level must not produce files overlapping that one's outputs.
type Busy func(level int, smallest, largest []byte) bool

// LevelTarget returns the target size of level n >= 1.
func LevelTarget(n int, o PickerOptions) uint64 {
	t := float64(o.BaseBytes)
	for i := 1; i < n; i++ {
		t *= o.Multiplier
	}
	return uint64(t)
}

// noTarget is the target of a level that must not score: the levels above
// the base level under dynamic sizing.
const noTarget = math.MaxUint64

// LevelTargets returns the target size of each level n >= 1 (index 0 is
// unused) and the base level, the level L0 compacts into.
//
// Without o.Dynamic the targets are fixed: L1 is BaseBytes and each level
// below it Multiplier times the one above; the base level is L1.
//
// With o.Dynamic they follow RocksDB 7.8's CalculateBaseBytes: the largest
// level below L0 keeps its size as the last level's target, and each level
// up is Multiplier times smaller, up to the base level: the first level
// whose target would not exceed BaseBytes (or L0's size, when larger),
// never below the first non-empty level and never above L1. Levels above
// the base level get no target (they never score); they are empty, since
// the base level is never below the first non-empty one. With nothing
// below L0 the base level is the last level. When L0 is backlogged (larger
// than the base level's target and than BaseBytes, or twice the L0
// trigger in files), the base level's target becomes L0's size and the
// multiplier is stretched so that the last level's target stays the
// largest level's size. No target is below the base level's maximum
// (BaseBytes or L0's size), so that L1+ does not outscore a growing L0.
//
// O(levels) on a sized Version.
func (v *Version) LevelTargets(o PickerOptions) (t [NumLevels]uint64, baseLevel int) {
	if !o.Dynamic {
		for n := 1; n < NumLevels; n++ {
			t[n] = LevelTarget(n, o)
		}
		return t, 1
	}
	for n := range t {
		t[n] = noTarget
	}
	mult := max(o.Multiplier, 1)
	var maxSize uint64
	first := -1
	for n := 1; n < NumLevels; n++ {
		size := v.LevelSize(n)
		if size > 0 && first < 0 {
			first = n
		}
		maxSize = max(maxSize, size)
	}
	if maxSize == 0 {
		return t, NumLevels - 1
	}
	l0Size := v.LevelSize(0)
	baseMax := max(o.BaseBytes, l0Size)
	baseMin := uint64(float64(baseMax) / mult)
	cur := maxSize
	for n := NumLevels - 2; n >= first; n-- {
		cur = uint64(float64(cur) / mult)
	}
	var baseSize uint64
	baseLevel = first
	if cur <= baseMin {
		// More levels hold data than the size needs: the first non-empty
		// level stays the base level, at the smallest target it may have.
		baseSize = baseMin + 1
	} else {
		for baseLevel > 1 && cur > baseMax {
			baseLevel--
			cur = uint64(float64(cur) / mult)
		}
		baseSize = min(cur, baseMax)
	}
	levelMult := mult
	if l0Size > baseSize && (l0Size > o.BaseBytes ||
		(o.L0Trigger > 0 && len(v.Levels[0])/2 >= o.L0Trigger)) {
		baseSize = l0Size
		if baseLevel == NumLevels-1 {
			levelMult = 1
		} else {
			levelMult = math.Pow(float64(maxSize)/float64(baseSize), 1/float64(NumLevels-baseLevel-1))
		}
	}
	size := float64(baseSize)
	for n := baseLevel; n < NumLevels; n++ {
		if n > baseLevel {
			size *= levelMult
		}
		target := uint64(noTarget)
		if size < float64(noTarget) {
			target = uint64(size)
		}
		t[n] = max(target, baseMax)
	}
	return t, baseLevel
}

// BaseLevel returns the level L0 compacts into (see LevelTargets).
func (v *Version) BaseLevel(o PickerOptions) int {
	_, b := v.LevelTargets(o)
	return b
}

// Scores returns each level's compaction score: for L0 the number of files
// not being compacted over L0Trigger, for Ln the size of its files not
// being compacted over the level's target (see LevelTargets). The last
// level never scores, nor do the levels above the base level.
func (v *Version) Scores(o PickerOptions) [NumLevels]float64 {
	s, _ := v.scores(o)
	return s
}

// ScoresAndBase returns Scores and the base level (see LevelTargets).
func (v *Version) ScoresAndBase(o PickerOptions) ([NumLevels]float64, int) {
	return v.scores(o)
}

func (v *Version) scores(o PickerOptions) ([NumLevels]float64, int) {
	var s [NumLevels]float64
	targets, baseLevel := v.LevelTargets(o)
	n := 0
	for _, f := range v.Levels[0] {
		if !f.Compacting {
			n++
		}
	}
	if o.L0Trigger > 0 {
		s[0] = float64(n) / float64(o.L0Trigger)
	}
	for level := 1; level < NumLevels-1; level++ {
		if targets[level] == noTarget {
			continue
		}
		var size uint64
		for _, f := range v.Levels[level] {
			if !f.Compacting {
				size += f.Size
			}
		}
		s[level] = float64(size) / float64(max(targets[level], 1))
	}
	return s, baseLevel
}

// PendingCompactionBytes estimates the bytes compaction must rewrite to bring
// every level under its target, as RocksDB's
// estimated-pending-compaction-bytes does: L0's size once it reaches the
// trigger, carried into the base level, then each level's excess over its target times the fan-out into
// the level below, the excess carried down.
//
// It is O(levels): level sizes are cached per Version, and the result for
// the last options asked is memoized, so the write path, which asks once per
// commit group, does not walk the files.
func (v *Version) PendingCompactionBytes(o PickerOptions) uint64 {
	if !v.sized {
		return v.pendingCompactionBytes(o)
	}
	if m := v.pending.Load(); m != nil && m.o == o {
		return m.n
	}
	n := v.pendingCompactionBytes(o)
	v.pending.Store(&pendingMemo{o: o, n: n})
	return n
}

// pendingMemo is one memoized PendingCompactionBytes answer.
type pendingMemo struct {
	o PickerOptions
	n uint64
}

func (v *Version) pendingCompactionBytes(o PickerOptions) uint64 {
	var pending, carry float64
	if len(v.Levels[0]) >= o.L0Trigger {
		carry = float64(v.LevelSize(0))
		pending += carry
	}
	targets, baseLevel := v.LevelTargets(o)
	for level := baseLevel; level < NumLevels-1; level++ {
		own := float64(v.LevelSize(level))
		size := own + carry
		target := float64(targets[level])
		if size <= target {
			carry = 0
			continue
		}
		excess := size - target
		ratio := 0.0
		if own > 0 {
			ratio = float64(v.LevelSize(level+1)) / own
		}
		pending += excess * (ratio + 1)
		carry = excess
	}
	return uint64(pending)
}

// PickLeveled chooses the leveled compaction of highest score >= 1 whose
// inputs are free, or nil. Within a level it picks by overlap ratio (see
// pickLevel); cursor[n] is the largest user key of the last file picked
// from level n, which breaks ties.
func (v *Version) PickLeveled(o PickerOptions, busy Busy, cursor *[NumLevels][]byte) *Pick {
	scores, baseLevel := v.scores(o)
	tried := [NumLevels]bool{}
	for {
		best := -1
		for level := 0; level < NumLevels-1; level++ {
			if !tried[level] && scores[level] >= 1 && (best < 0 || scores[level] > scores[best]) {
				best = level
			}
		}
		if best < 0 {
			return nil
		}
		tried[best] = true
		var p *Pick
		if best == 0 {
			p = v.pickL0(baseLevel, busy)
		} else {
			p = v.pickLevel(best, busy, cursor[best])
		}
		if p != nil {
			p.Score = scores[best]
			p.Grandparents = v.OverlapsRange(p.OutputLevel+1, p.Smallest, p.Largest)
			return p
		}
	}
}

// SeekState says what PickSeek made of a seek-compaction candidate.
type SeekState int

const (
	// SeekPicked: the pick compacts the candidate.
	SeekPicked SeekState = iota
	// SeekGone: the candidate is no longer at its level in v (compacted,
	// moved or deleted), or it sits in the last level: forget it.
	SeekGone
	// SeekBusy: the candidate or a file it must be compacted with is being
	// compacted, or an in-flight compaction writes into its range: try
	// again later.
	SeekBusy
)

// PickSeek chooses the read-triggered compaction of f, a file of level
// whose seek budget is spent (LevelDB's seek compaction), into level+1:
// for L0, f and every L0 file overlapping it, widened until no other L0
// file overlaps the range (so that no older version of a key stays in L0
// above a newer one moved down), with the files of baseLevel (the level
// L0 compacts into, see LevelTargets) they overlap; for Ln, f and its
// boundary neighbours with the overlapping files of Ln+1.
func (v *Version) PickSeek(f *FileMetadata, level, baseLevel int, busy Busy) (*Pick, SeekState) {
	if level < 0 || level >= NumLevels-1 || !v.holds(level, f) {
		return nil, SeekGone
	}
	var inputs []*FileMetadata
	if level == 0 {
		inputs = v.l0Closure(f)
	} else {
		inputs = v.AddBoundaryInputs(level, []*FileMetadata{f})
	}
	if anyCompacting(inputs) {
		return nil, SeekBusy
	}
	out := level + 1
	if level == 0 {
		out = max(baseLevel, 1)
	}
	p := v.expand(level, out, inputs, busy)
	if p == nil {
		return nil, SeekBusy
	}
	p.Grandparents = v.OverlapsRange(p.OutputLevel+1, p.Smallest, p.Largest)
	return p, SeekPicked
}

// holds reports whether f is one of level's files.
func (v *Version) holds(level int, f *FileMetadata) bool {
	for _, g := range v.Levels[level] {
		if g == f {
			return true
		}
	}
	return false
}

// l0Closure returns f and the L0 files overlapping it, the range widened
// until no L0 file left out overlaps it, in L0's (newest first) order.
func (v *Version) l0Closure(f *FileMetadata) []*FileMetadata {
	files := v.Levels[0]
	in := make([]bool, len(files))
	smallest, largest := f.Smallest.UserKey, f.Largest.UserKey
	for changed := true; changed; {
		changed = false
		for i, g := range files {
			if in[i] || v.Comparer().CompareUser(g.Largest.UserKey, smallest) < 0 ||
				v.Comparer().CompareUser(g.Smallest.UserKey, largest) > 0 {
				continue
			}
			in[i], changed = true, true
			if v.Comparer().CompareUser(g.Smallest.UserKey, smallest) < 0 {
				smallest = g.Smallest.UserKey
			}
			if v.Comparer().CompareUser(g.Largest.UserKey, largest) > 0 {
				largest = g.Largest.UserKey
			}
		}
	}
	var out []*FileMetadata
	for i, g := range files {
		if in[i] {
			out = append(out, g)
		}
	}
	return out
}

// pickL0 takes every L0 file, so that no older L0 version of a key stays
// above a newer one moved down, and the files of the base level (out) they
// overlap.
func (v *Version) pickL0(out int, busy Busy) *Pick {
	files := v.Levels[0]
	if len(files) == 0 || anyCompacting(files) {
		return nil
	}
	return v.expand(0, out, append([]*FileMetadata(nil), files...), busy)
}

// pickLevel takes the free file of level whose compaction rewrites the
// fewest bytes per byte moved down: the smallest ratio of overlapping bytes
// in the next level to the file's size (RocksDB's kMinOverlappingRatio,
// its default). Round-robin picking (LevelDB's compact pointer) rewrites
// about a fifth more on random writes. cursor, the largest key of the last
// pick, breaks ties so that equal candidates take turns.
func (v *Version) pickLevel(level int, busy Busy, cursor []byte) *Pick {
	files := v.Levels[level]
	type candidate struct {
		f     *FileMetadata
		ratio float64
		after bool // after the cursor
	}
	cands := make([]candidate, 0, len(files))
	for _, f := range files {
		if f.Compacting {
			continue
		}
		var overlap uint64
		for _, g := range v.OverlapsRange(level+1, f.Smallest.UserKey, f.Largest.UserKey) {
			overlap += g.Size
		}
		after := cursor == nil || v.Comparer().CompareUser(f.Smallest.UserKey, cursor) > 0
		cands = append(cands, candidate{f, float64(overlap) / float64(max(f.Size, 1)), after})
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].ratio != cands[j].ratio {
			return cands[i].ratio < cands[j].ratio
		}
		return cands[i].after && !cands[j].after
	})
	for _, c := range cands {
		inputs := v.AddBoundaryInputs(level, []*FileMetadata{c.f})
		if anyCompacting(inputs) {
			continue
		}
		if p := v.expand(level, level+1, inputs, busy); p != nil {
			return p
		}
	}
	return nil
}

// expand completes a pick from its start-level inputs: it adds the
// overlapping files of the output level and checks that none of them is
// compacting and that no in-flight compaction writes into the range.
func (v *Version) expand(level, out int, inputs []*FileMetadata, busy Busy) *Pick {
	smallest, largest := v.userRange(inputs)
	next := v.AddBoundaryInputs(out, v.OverlapsRange(out, smallest, largest))
	if anyCompacting(next) {
		return nil
	}
	if len(next) > 0 {
		s2, l2 := v.userRange(next)
		if v.Comparer().CompareUser(s2, smallest) < 0 {
			smallest = s2
		}
		if v.Comparer().CompareUser(l2, largest) > 0 {
			largest = l2
		}
	}
	if busy != nil && busy(out, smallest, largest) {
		return nil
	}
	return &Pick{StartLevel: level, OutputLevel: out, Inputs: [2][]*FileMetadata{inputs, next},
		Smallest: smallest, Largest: largest}
}

// PickRange chooses the manual compaction of level into out over the user
// key range [start, end] (nil = unbounded): for L0 every file, else the
// files of level overlapping the range. It returns nil when the level has
// no such file or one of them is compacting.
func (v *Version) PickRange(level, out int, start, end []byte) *Pick {
	var inputs []*FileMetadata
	if level == 0 {
		if len(v.OverlapsRange(0, start, end)) == 0 {
			return nil
		}
		inputs = append(inputs, v.Levels[0]...)
	} else {
		inputs = v.AddBoundaryInputs(level, v.OverlapsRange(level, start, end))
	}
	if len(inputs) == 0 || anyCompacting(inputs) {
		return nil
	}
	p := v.expand(level, out, inputs, nil)
	if p != nil {
		p.Grandparents = v.OverlapsRange(out+1, p.Smallest, p.Largest)
	}
	return p
}

// PickInLevel returns a compaction of the files of level (>= 1) overlapping
// [start, end] (nil = unbounded), widened to a clean cut, into the same
// level: RocksDB's bottommost-level pass of CompactRange, which rewrites
// the deepest level so that a compaction filter sees its entries. nil when
// nothing overlaps or an input is being compacted.
func (v *Version) PickInLevel(level int, start, end []byte) *Pick {
	if level <= 0 {
		return nil
	}
	inputs := v.AddBoundaryInputs(level, v.OverlapsRange(level, start, end))
	if len(inputs) == 0 || anyCompacting(inputs) {
		return nil
	}
	inputs = append([]*FileMetadata(nil), inputs...)
	smallest, largest := v.userRange(inputs)
	return &Pick{StartLevel: level, OutputLevel: level, Inputs: [2][]*FileMetadata{inputs, nil},
		Smallest: smallest, Largest: largest, Grandparents: v.OverlapsRange(level+1, smallest, largest)}
}

// AddBoundaryInputs returns inputs, a run of consecutive files of level,
// widened by the neighbours that share a boundary user key with it (in
// RocksDB's terms, expanded to a clean cut). A compaction that took one
// file of such a pair without the other would move some versions of the
// shared key to the next level while older or newer ones stayed, and could
// leave an older version above a newer one. L0 inputs (and an empty run)
// are returned as they are; otherwise the result is a new slice or inputs
// itself when nothing is added.
func (v *Version) AddBoundaryInputs(level int, inputs []*FileMetadata) []*FileMetadata {
	if level == 0 || len(inputs) == 0 {
		return inputs
	}
	files := v.Levels[level]
	lo := sort.Search(len(files), func(i int) bool {
		return v.Comparer().InternalCompare(files[i].Smallest, inputs[0].Smallest) >= 0
	})
	hi := lo + len(inputs) - 1
	if hi >= len(files) || files[lo] != inputs[0] || files[hi] != inputs[len(inputs)-1] {
		panic(base.AssertionFailedf("version: L%d compaction inputs are not a run of the level", level))
	}
	for lo > 0 && v.sharesBoundary(files[lo-1], files[lo]) {
		lo--
	}
	for hi+1 < len(files) && v.sharesBoundary(files[hi], files[hi+1]) {
		hi++
	}
	if hi-lo+1 == len(inputs) {
		return inputs
	}
	return append([]*FileMetadata(nil), files[lo:hi+1]...)
}

// sharesBoundary reports whether adjacent files a and b of a level both hold
// versions of one user key: a's largest user key is b's smallest, and a's
// largest is a real key, not a range-deletion sentinel (an exclusive bound).
func (v *Version) sharesBoundary(a, b *FileMetadata) bool {
	return !IsSentinel(a.Largest) && v.Comparer().CompareUser(a.Largest.UserKey, b.Smallest.UserKey) == 0
}

// OverlapsRange is Overlaps with nil meaning unbounded on either side. The
// result is a new slice.
func (v *Version) OverlapsRange(level int, start, end []byte) []*FileMetadata {
	if level >= NumLevels {
		return nil
	}
	var out []*FileMetadata
	for _, f := range v.Levels[level] {
		if (start == nil || v.Comparer().CompareUser(f.Largest.UserKey, start) >= 0) &&
			(end == nil || v.Comparer().CompareUser(f.Smallest.UserKey, end) <= 0) {
			out = append(out, f)
		}
	}
	return out
}

// BelowOverlaps reports whether any level below out holds a file
// intersecting [smallest, largest]; when none does, out is the bottommost
// level for that range.
func (v *Version) BelowOverlaps(out int, smallest, largest []byte) bool {
	for level := out + 1; level < NumLevels; level++ {
		if len(v.OverlapsRange(level, smallest, largest)) > 0 {
			return true
		}
	}
	return false
}

// DeepestOverlapping returns the deepest level holding a file that
// intersects [start, end] (nil = unbounded), or -1.
func (v *Version) DeepestOverlapping(start, end []byte) int {
	for level := NumLevels - 1; level >= 0; level-- {
		if len(v.OverlapsRange(level, start, end)) > 0 {
			return level
		}
	}
	return -1
}

// TotalSize returns the size of all the files of v.
func (v *Version) TotalSize() uint64 {
	var n uint64
	for level := range v.Levels {
		n += v.LevelSize(level)
	}
	return n
}

// PickFIFODeletions returns the oldest L0 files to delete so that the total
// size of the files falls to limit or below, never the newest file and
// never a file being compacted; nil when nothing needs deleting.
func (v *Version) PickFIFODeletions(limit uint64) []*FileMetadata {
	total := v.TotalSize()
	files := v.Levels[0] // newest first
	var out []*FileMetadata
	for i := len(files) - 1; i > 0 && total > limit; i-- {
		if files[i].Compacting {
			break
		}
		out = append(out, files[i])
		total -= files[i].Size
	}
	return out
}

// PickFIFOIntraL0 returns at least minFiles consecutive L0 files, newest
// first from the newest free one, each at most maxFileSize, to merge into
// one L0 file (FIFO's allow_compaction); nil when there are too few.
// Consecutive files keep L0's newest-first order intact.
func (v *Version) PickFIFOIntraL0(minFiles int, maxFileSize uint64) *Pick {
	files := v.Levels[0]
	i := 0
	for i < len(files) && files[i].Compacting {
		i++
	}
	j := i
	for j < len(files) && !files[j].Compacting && files[j].Size <= maxFileSize {
		j++
	}
	if j-i < max(minFiles, 2) {
		return nil
	}
	inputs := append([]*FileMetadata(nil), files[i:j]...)
	smallest, largest := v.userRange(inputs)
	return &Pick{Inputs: [2][]*FileMetadata{inputs, nil}, Smallest: smallest, Largest: largest}
}

func anyCompacting(files []*FileMetadata) bool {
	for _, f := range files {
		if f.Compacting {
			return true
		}
	}
	return false
}

// userRange returns the smallest and largest user keys of files.
func (v *Version) userRange(files []*FileMetadata) (smallest, largest []byte) {
	for i, f := range files {
		if i == 0 || v.Comparer().CompareUser(f.Smallest.UserKey, smallest) < 0 {
			smallest = f.Smallest.UserKey
		}
		if i == 0 || v.Comparer().CompareUser(f.Largest.UserKey, largest) > 0 {
			largest = f.Largest.UserKey
		}
	}
	return smallest, largest
}
