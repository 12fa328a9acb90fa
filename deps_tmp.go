package strata

import (
	_ "github.com/cespare/xxhash/v2"
	_ "github.com/cockroachdb/errors"
	_ "github.com/klauspost/compress/snappy"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/stretchr/testify/require"
	_ "github.com/zeebo/xxh3"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
)
