package db_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stratadb/strata/db"
	"github.com/stretchr/testify/require"
)

// modelFilter removes values starting with "x", changes those starting
// with "c" to start with "C", and keeps the rest: each decision depends on
// the value alone, so the model knows what a filtered read may give.
type modelFilter struct{ onFlush bool }

func (modelFilter) Name() string { return "test.ModelFilter" }

func (modelFilter) Filter(_ int, _, value []byte) (db.FilterDecision, []byte) {
	switch {
	case bytes.HasPrefix(value, []byte("x")):
		return db.FilterRemove, nil
	case bytes.HasPrefix(value, []byte("c")):
		return db.FilterChangeValue, append([]byte("C"), value[1:]...)
	}
	return db.FilterKeep, nil
}

func (f modelFilter) FilterOnFlush() bool { return f.onFlush }

// modelValue is a value of the model and the time it was written.
type modelValue struct {
	v       string
	written int64
}

// TestCompactionFilter_Model runs random writes, deletions, range
// deletions, snapshots, flushes and compactions under modelFilter (with
// and without TTL and a test clock) against a map, and checks after each
// step: a snapshot reads exactly what it saw (with IncludeExpired; without
// it, minus what expired); the latest state gives, for each key, the
// model's value or what the filter may have made of it (absent for "x",
// "C..." for "c"), and never an expired value.
func TestCompactionFilter_Model(t *testing.T) {
	for _, tc := range []struct {
		seed    int64
		onFlush bool
		ttl     time.Duration
		// blob: values of 4 bytes and more go to blob files (garbage
		// collection on), so the filter and TTL see values read from them.
		blob bool
	}{{1, false, 0, false}, {2, true, 0, false}, {3, false, 10 * time.Second, false}, {4, true, 10 * time.Second, false},
		{5, false, 0, true}, {6, true, 10 * time.Second, true}, {7, false, 10 * time.Second, true}} {
		t.Run(fmt.Sprintf("seed%d-flush%v-ttl%v-blob%v", tc.seed, tc.onFlush, tc.ttl, tc.blob), func(t *testing.T) {
			runFilterModel(t, tc.seed, tc.onFlush, tc.ttl, tc.blob)
		})
	}
}

func runFilterModel(t *testing.T, seed int64, onFlush bool, ttl time.Duration, blob bool) {
	rng := rand.New(rand.NewSource(seed))
	o := &db.Options{CompactionFilter: modelFilter{onFlush: onFlush}, TTL: ttl,
		WriteBufferSize: 4 << 10, DisableAutoCompactions: rng.Intn(2) == 0}
	if blob {
		o.EnableBlobFiles, o.MinBlobSize, o.BlobFileSize = true, 4, 1<<10
		o.EnableBlobGarbageCollection, o.BlobGarbageCollectionAgeCutoff = true, 0.5
	}
	d, _ := openTest(t, o)
	defer d.Close()
	clock := newTestClock(d, t0)
	now := int64(t0)
	ttlSec := int64(ttl / time.Second)
	expired := func(mv modelValue) bool { return ttlSec > 0 && mv.written+ttlSec < now }

	model := map[string]modelValue{}
	type snap struct {
		s     *db.Snapshot
		state map[string]modelValue
	}
	var snaps []snap
	key := func() string { return fmt.Sprintf("k%02d", rng.Intn(40)) }
	all := &db.ReadOptions{IncludeExpired: true}

	// verifyLatest checks the state read at ro (nil: now) against the model
	// and returns it, key by key.
	verifyLatest := func(step int, ro *db.ReadOptions) map[string]string {
		// Both scans read at one snapshot: at "now" a background
		// compaction may filter between them, and the second would
		// rightly miss what the first saw.
		sn := (*db.Snapshot)(nil)
		if ro != nil {
			sn = ro.Snapshot
		} else {
			sn = d.NewSnapshot()
			defer sn.Release()
		}
		withExpired := db.ReadOptions{IncludeExpired: true, Snapshot: sn}
		plain := db.ReadOptions{Snapshot: sn}
		got := map[string]string{}
		for _, kv := range scan(t, d, &withExpired) {
			k, v, _ := stringsCut(kv)
			got[k] = v
		}
		live := map[string]bool{}
		for _, k := range scanKeys(t, d, &plain) {
			live[k] = true
		}
		for k := range got {
			_, ok := model[k]
			require.True(t, ok, "step %d: key %s is not in the model", step, k)
		}
		for k, mv := range model {
			v, ok := got[k]
			switch {
			case !ok:
				require.True(t, mv.v[0] == 'x' || expired(mv), "step %d: %s=%s is missing", step, k, mv.v)
			case mv.v[0] == 'c':
				require.Contains(t, []string{mv.v, "C" + mv.v[1:]}, v, "step %d: key %s", step, k)
			default:
				require.Equal(t, mv.v, v, "step %d: key %s", step, k)
			}
			if expired(mv) {
				require.False(t, live[k], "step %d: expired %s=%s is read", step, k, mv.v)
			} else {
				require.Equal(t, ok, live[k], "step %d: key %s", step, k)
			}
		}
		return got
	}

	check := func(step int) {
		for _, s := range snaps {
			var want, wantLive []string
			for k, mv := range s.state {
				want = append(want, k+"="+mv.v)
				if !expired(mv) {
					wantLive = append(wantLive, k+"="+mv.v)
				}
			}
			sort.Strings(want)
			sort.Strings(wantLive)
			require.Equal(t, nonNilStrings(want), nonNilStrings(scan(t, d, &db.ReadOptions{Snapshot: s.s, IncludeExpired: true})), "step %d: snapshot", step)
			require.Equal(t, nonNilStrings(wantLive), nonNilStrings(scan(t, d, &db.ReadOptions{Snapshot: s.s})), "step %d: snapshot, live", step)
		}
		verifyLatest(step, nil)
	}

	for step := 0; step < 700; step++ {
		r := rng.Intn(100)
		if debugModel {
			t.Logf("step %d r %d snaps %d", step, r, len(snaps))
		}
		switch {
		case r < 50:
			k := key()
			v := fmt.Sprintf("%c%d", "xck"[rng.Intn(3)], step)
			require.NoError(t, d.Put([]byte(k), []byte(v), nil))
			model[k] = modelValue{v: v, written: now}
		case r < 62:
			k := key()
			require.NoError(t, d.Delete([]byte(k), nil))
			delete(model, k)
		case r < 65:
			a, b := key(), key()
			if a > b {
				a, b = b, a
			}
			require.NoError(t, d.DeleteRange([]byte(a), []byte(b), nil))
			for k := range model {
				if k >= a && k < b {
					delete(model, k)
				}
			}
		case r < 70:
			if len(snaps) < 3 {
				// What the filter already did before the snapshot is
				// uncertain to the model: the snapshot must keep reading
				// exactly what it reads now, which must agree with the
				// model.
				sn := d.NewSnapshot()
				state := map[string]modelValue{}
				for k, v := range verifyLatest(step, &db.ReadOptions{Snapshot: sn}) {
					state[k] = modelValue{v: v, written: model[k].written}
				}
				snaps = append(snaps, snap{s: sn, state: state})
			}
		case r < 75:
			if len(snaps) > 0 {
				i := rng.Intn(len(snaps))
				snaps[i].s.Release()
				snaps = append(snaps[:i], snaps[i+1:]...)
			}
		case r < 82:
			require.NoError(t, d.Flush())
		case r < 87:
			a, b := key(), key()
			if a > b {
				a, b = b, a
			}
			require.NoError(t, d.CompactRange([]byte(a), []byte(b)))
		case r < 90:
			require.NoError(t, d.CompactRange(nil, nil))
		default:
			now += int64(rng.Intn(4))
			clock.set(now)
		}
		if step%25 == 0 {
			check(step)
		}
	}
	check(-1)
	for _, s := range snaps {
		s.s.Release()
	}
	require.NoError(t, d.CompactRange(nil, nil))
	snaps = nil
	// Every snapshot gone and everything compacted: the filter's verdicts
	// and TTL are final.
	got := map[string]string{}
	for _, kv := range scan(t, d, all) {
		k, v, _ := stringsCut(kv)
		got[k] = v
	}
	for k, mv := range model {
		switch {
		case mv.v[0] == 'x' || expired(mv):
			require.NotContains(t, got, k)
		case mv.v[0] == 'c':
			require.Equal(t, "C"+mv.v[1:], got[k], "key %s", k)
		default:
			require.Equal(t, mv.v, got[k], "key %s", k)
		}
	}
}

var debugModel = false

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func stringsCut(kv string) (string, string, bool) {
	i := bytes.IndexByte([]byte(kv), '=')
	if i < 0 {
		return kv, "", false
	}
	return kv[:i], kv[i+1:], true
}
