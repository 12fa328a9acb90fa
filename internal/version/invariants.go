package version

import "github.com/stratadb/strata/internal/invariants"

// invariantsEnabled turns on costly self-checks (every installed Version is
// fully checked with CheckOrdering); see internal/invariants.
const invariantsEnabled = invariants.Enabled
