package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/errors"
)

// Reporter stands in for *testing.T in goroutines a test spawns, so that
// helpers written against require.TestingT can run there. testing.T's
// FailNow (and so every require assertion) must run on the test goroutine;
// a Reporter records the failure and ends only the goroutine that failed
// (runtime.Goexit, so its deferred calls such as wg.Done still run). The
// test goroutine joins its workers and then checks
//
//	require.NoError(t, r.Err())
//
// A Reporter is safe for concurrent use.
type Reporter struct {
	mu     sync.Mutex
	msgs   []string
	failed atomic.Bool
}

// Errorf records a failure message; it implements require.TestingT.
func (r *Reporter) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	r.failed.Store(true)
}

// FailNow marks the Reporter failed and ends the calling goroutine.
func (r *Reporter) FailNow() {
	r.failed.Store(true)
	runtime.Goexit()
}

// Helper is a no-op, for testify's helper detection.
func (r *Reporter) Helper() {}

// Failed reports whether any goroutine has failed; workers poll it to
// stop early.
func (r *Reporter) Failed() bool { return r.failed.Load() }

// Err returns the recorded failures, or nil when none was.
func (r *Reporter) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.msgs) == 0 {
		if r.failed.Load() {
			return errors.New("a goroutine called FailNow")
		}
		return nil
	}
	return errors.Newf("%d failure(s) in spawned goroutines:\n%s", len(r.msgs), strings.Join(r.msgs, "\n"))
}
