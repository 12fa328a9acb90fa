package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stratadb/strata/stress"
)

// runLinearize is -mode=linearize: concurrent histories on a small key
// space, each checked with porcupine.
func runLinearize(c stress.Config, histories, opsPerClient int, visualize string, verbose bool) int {
	cfg := stress.LinConfig{
		Seed:         c.Seed,
		Histories:    histories,
		Clients:      c.Threads,
		OpsPerClient: opsPerClient,
		VisualizeDir: visualize,
		Log:          io.Discard,
	}
	if verbose {
		cfg.Log = os.Stderr
	}
	fmt.Fprintf(os.Stderr, "stress: linearize, seed %d, %d histories\n", c.Seed, histories)
	t0 := time.Now()
	st, err := stress.RunLinearize(cfg)
	fmt.Fprintf(os.Stderr, "stress: %s in %s\n", st, time.Since(t0).Round(time.Millisecond))
	if err != nil {
		fmt.Fprintf(os.Stderr, "stress: FAILED (seed %d): %v\n", c.Seed, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "stress: OK")
	return 0
}

// runMetamorphic is -mode=metamorphic: one seeded sequence per seed, run
// under every configuration, the results compared op by op.
func runMetamorphic(seed int64, seeds, ops int, verbose bool) int {
	var log io.Writer = io.Discard
	if verbose {
		log = os.Stderr
	}
	if seeds < 1 {
		seeds = 1
	}
	fmt.Fprintf(os.Stderr, "stress: metamorphic, seeds %d..%d, %d ops, %d configurations\n",
		seed, seed+int64(seeds)-1, ops, len(stress.MetaVariants))
	t0 := time.Now()
	for s := seed; s < seed+int64(seeds); s++ {
		if err := stress.RunMetamorphic(stress.MetaConfig{Seed: s, Ops: ops, Log: log}); err != nil {
			fmt.Fprintf(os.Stderr, "stress: FAILED (seed %d): %v\n", s, err)
			return 1
		}
	}
	fmt.Fprintf(os.Stderr, "stress: %d seeds x %d ops x %d configurations agree in %s\n",
		seeds, ops, len(stress.MetaVariants), time.Since(t0).Round(time.Millisecond))
	fmt.Fprintln(os.Stderr, "stress: OK")
	return 0
}

// runCompact is -mode=compact: one seeded sequence per seed on a small key
// space under tiny level targets, snapshots held across compactions, every
// read checked exactly against the model.
func runCompact(seed int64, seeds, ops, subcompactions int, verbose bool) int {
	var log io.Writer = io.Discard
	if verbose {
		log = os.Stderr
	}
	if seeds < 1 {
		seeds = 1
	}
	fmt.Fprintf(os.Stderr, "stress: compact, seeds %d..%d, %d ops, %d subcompactions\n", seed, seed+int64(seeds)-1, ops, subcompactions)
	t0 := time.Now()
	var total stress.CompactStats
	for s := seed; s < seed+int64(seeds); s++ {
		st, err := stress.RunCompact(stress.CompactConfig{Seed: s, Ops: ops, Subcompactions: subcompactions, Log: log})
		if err != nil {
			fmt.Fprintf(os.Stderr, "stress: FAILED (seed %d): %v\n", s, err)
			return 1
		}
		total.Ops += st.Ops
		total.Reads += st.Reads
		total.Compactions += st.Compactions
		if verbose {
			fmt.Fprintf(os.Stderr, "stress: seed %d: %s\n", s, st)
		}
	}
	fmt.Fprintf(os.Stderr, "stress: %d seeds: %d ops, %d reads checked, %d compactions in %s\n",
		seeds, total.Ops, total.Reads, total.Compactions, time.Since(t0).Round(time.Millisecond))
	fmt.Fprintln(os.Stderr, "stress: OK")
	return 0
}
