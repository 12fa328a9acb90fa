package testutil

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReporter(t *testing.T) {
	var r Reporter
	require.NoError(t, r.Err())
	require.False(t, r.Failed())

	var wg sync.WaitGroup
	reached := make(chan bool, 2)
	for _, fail := range []bool{false, true} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(&r, 1, map[bool]int{false: 1, true: 2}[fail], "goroutine %v", fail)
			reached <- fail // only the passing goroutine gets here
		}()
	}
	wg.Wait() // the failing goroutine's deferred Done ran
	close(reached)
	var got []bool
	for v := range reached {
		got = append(got, v)
	}
	require.Equal(t, []bool{false}, got)
	require.True(t, r.Failed())
	err := r.Err()
	require.Error(t, err)
	require.Contains(t, err.Error(), "goroutine true")

	var r2 Reporter
	done := make(chan struct{})
	go func() {
		defer close(done)
		r2.FailNow()
	}()
	<-done
	require.Error(t, r2.Err())
}
