//go:build invariants

package version

// invariantsEnabled turns on costly self-checks (every installed Version is
// fully checked with CheckOrdering).
const invariantsEnabled = true
