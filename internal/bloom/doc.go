// Package bloom builds and probes RocksDB 7.8.3 full-filter blocks: the
// legacy cache-local Bloom filter (format_version ≤ 4) and FastLocalBloom
// (format_version 5). It also recognises Ribbon filters, which it cannot
// evaluate and so answers "may match" for.
//
// # Block layout
//
// A full filter block is the filter bits followed by 5 bytes of metadata. The
// reader dispatches on the signed byte m = block[len-5]:
//
//	len(block) ≤ 5      empty filter: matches nothing
//	m ≥ 1               legacy Bloom, m = number of probes
//	m = -1 (0xFF)       newer Bloom; sub-implementation byte 0 = FastLocalBloom
//	m = -2 (0xFE)       Ribbon (identified only, always "may match")
//	m = 0, other m < 0  reserved: always "may match"
//
// Legacy Bloom (LegacyLocalityBloomImpl, no extra rotations):
//
//	bits[num_lines*64] ‖ num_probes (1 byte) ‖ fixed32 num_lines
//
// The key hash is h = Hash32(key, LegacySeed). The line is h mod num_lines;
// delta = h rotated right by 17; each of num_probes probes tests bit h & 511
// of the 64-byte line (byte (h&511)/8, bit (h&511)%8), then h += delta.
// Writers size the filter as ceil(n*bits_per_key/512) lines, made odd, and
// use num_probes = clamp(floor(bits_per_key*0.69), 1, 30). A reader accepts
// other power-of-two line sizes (len/num_lines) as RocksDB does; any other
// geometry reads as "may match".
//
// FastLocalBloom (FastLocalBloomImpl):
//
//	bits[L*64] ‖ 0xFF ‖ 0x00 ‖ num_probes ‖ 0x00 ‖ 0x00
//
// The third metadata byte is (log2(line bytes) - 6) << 5 | num_probes; only
// 64-byte lines exist, so it is just num_probes (1..30). Non-zero reserved
// bytes, another line size or another sub-implementation read as "may
// match". The key hash is h = HashKey(key) (XXH3 preview, xxph3.go). With
// h1 = low 32 bits and h2 = high 32 bits, the line is (h1 * L) >> 32; each
// probe tests bit h2 >> 23 of that line, then h2 *= 0x9e3779b9. Writers size
// the bits as roundup64(ceil(n * millibits_per_key / 8000)) bytes and pick
// num_probes from millibits_per_key (chooseNumProbes).
//
// Ribbon: 0xFE ‖ seed byte ‖ num_blocks (24-bit LE).
//
// Keys are added once per run of equal consecutive hashes, as RocksDB does,
// so n above is the number of such runs (NumEntries).
//
// Example sizes (2000 distinct keys at 10 bits/key): FastLocal 2560 + 5 =
// 2565 bytes with metadata ff 00 06 00 00; legacy 41 lines = 2624 + 5 = 2629
// bytes with metadata 06 29 00 00 00. Builder reproduces the filters of the
// RocksDB 7.8.3 fixtures byte for byte (fixture_test.go).
//
// # Probing
//
// MayContain(filter, key) hashes the key with the format's hash. Callers that
// probe several filters with one key hash it once with HashKey and call
// MayContainHash, which costs one cache line and no allocation for
// FastLocalBloom (legacy filters rehash the key with Hash32). No function
// here panics or allocates on malformed filter bytes; undecodable filters
// answer "may match" so that a bad filter never hides a key.
package bloom
