package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/base"
	"github.com/stratadb/strata/internal/version"
)

// loadVersions loads the MANIFEST, naming unsupported column families as
// such (the error wraps both version.ErrUnsupportedColumnFamily and
// ErrInvalidArgument).
func loadVersions(d *DB, opts version.Options) (*version.VersionSet, error) {
	vs, err := version.Load(d.fs, d.dirname, opts)
	if err != nil && errors.Is(err, version.ErrUnsupportedColumnFamily) {
		return nil, errors.Wrapf(base.Mark(err, ErrInvalidArgument),
			"strata: %s was written with column families other than \"default\", which Strata does not support", d.dirname)
	}
	return vs, err
}
