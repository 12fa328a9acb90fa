//go:build strata_noprefixcheck

package db

// skipPrefixCheck: this build (tag strata_noprefixcheck) trusts every
// table's prefix filter with no compatibility check, which is wrong for
// tables built with another extractor. It exists only to measure the floor
// of BenchmarkPrefixSeek (case no-check); the db tests do not run in it
// (see TestMain).
const skipPrefixCheck = true
