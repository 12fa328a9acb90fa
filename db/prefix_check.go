//go:build !strata_noprefixcheck

package db

// skipPrefixCheck is false in every build but the benchmark-only one
// tagged strata_noprefixcheck (prefix_check_skipped.go); as a constant, its test
// in prefixFilterUsable compiles away.
const skipPrefixCheck = false
