package db

import (
	"github.com/cockroachdb/errors"
	"github.com/stratadb/strata/internal/version"
	"github.com/stratadb/strata/vfs"
)

// ListColumnFamilies returns the names of the live column families of the
// database in dir, "default" first, then by ID, as RocksDB's
// DB::ListColumnFamilies. It reads CURRENT and the MANIFEST it names and
// writes nothing (version.Load only reads; a MANIFEST is written only by a
// later LogAndApply, which this never calls), so it may be called while the
// database is open by this or another process.
func ListColumnFamilies(dir string) ([]string, error) {
	vs, err := version.Load(vfs.Default, dir, version.Options{})
	if err != nil {
		return nil, errors.Wrapf(err, "strata: listing the column families of %s", dir)
	}
	defer vs.Close()
	fams := vs.Families()
	names := make([]string, len(fams))
	for i, f := range fams {
		names[i] = f.Name()
	}
	return names, nil
}
