// The four deprecated RFC 9530 §5 checksums as pure, incremental functions:
// BSD `sum` (unixsum), POSIX `cksum` (unixcksum), Adler-32 (adler) and
// CRC-32C (crc32c). Each takes the value returned for the previous chunk, so
// a stream is checksummed chunk by chunk without buffering and without any
// per-chunk allocation; lib/core/algorithms.ts turns the numbers into the
// big-endian octets the fields carry.
//
// Own code rather than a library: docs/design.md ("Algorithms").

/** A slice-by-8 lookup table: eight 256-entry slices in one buffer (8 KiB). */
type SliceTables = [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array]

function slices (table: Int32Array): SliceTables {
  return [0, 1, 2, 3, 4, 5, 6, 7].map((s) => table.subarray(s * 256, s * 256 + 256)) as SliceTables
}

/**
 * Tables for a reflected (LSB-first) CRC-32. Slice s maps a byte to its CRC
 * contribution after s more zero bytes, which lets the main loop fold eight
 * input bytes per step with independent lookups instead of a serial chain.
 */
function reflectedTables (poly: number): SliceTables {
  const table = new Int32Array(8 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = (c & 1) ? (c >>> 1) ^ poly : c >>> 1
    table[n] = c
  }
  for (let n = 0; n < 256; n++) {
    let c = table[n]!
    for (let s = 1; s < 8; s++) {
      c = (c >>> 8) ^ table[c & 0xff]!
      table[s * 256 + n] = c
    }
  }
  return slices(table)
}

/** Tables for a non-reflected (MSB-first) CRC-32, same slicing as above. */
function msbFirstTables (poly: number): SliceTables {
  const table = new Int32Array(8 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n << 24
    for (let k = 0; k < 8; k++) c = (c & 0x80000000) ? (c << 1) ^ poly : c << 1
    table[n] = c
  }
  for (let n = 0; n < 256; n++) {
    let c = table[n]!
    for (let s = 1; s < 8; s++) {
      c = (c << 8) ^ table[c >>> 24]!
      table[s * 256 + n] = c
    }
  }
  return slices(table)
}

// Built once at module load. Int32Array rather than Uint32Array: V8 keeps int32
// values unboxed, and XOR only needs the bit patterns.
const [C0, C1, C2, C3, C4, C5, C6, C7] = reflectedTables(0x82F63B78)
const [K0, K1, K2, K3, K4, K5, K6, K7] = msbFirstTables(0x04C11DB7)

// The `!` below only satisfy noUncheckedIndexedAccess. Every index is in range
// by construction: a byte, or an offset below data.length.

/**
 * CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, init and xorout
 * 0xFFFFFFFF (RFC 9260 Appendix A). `previous` is the value returned for
 * the preceding chunk (0 to start), the same convention as zlib's crc32().
 * check("123456789") = 0xE3069283.
 */
export function crc32c (data: Uint8Array, previous = 0): number {
  const n = data.length
  const end8 = n - (n & 7)
  let crc = ~previous
  let i = 0
  for (; i < end8; i += 8) {
    crc ^= data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24)
    crc = C7[crc & 0xff]! ^ C6[(crc >>> 8) & 0xff]! ^ C5[(crc >>> 16) & 0xff]! ^ C4[crc >>> 24]! ^
      C3[data[i + 4]!]! ^ C2[data[i + 5]!]! ^ C1[data[i + 6]!]! ^ C0[data[i + 7]!]!
  }
  for (; i < n; i++) crc = (crc >>> 8) ^ C0[(crc ^ data[i]!) & 0xff]!
  return ~crc >>> 0
}

/**
 * The running register of POSIX cksum's CRC: MSB-first, polynomial
 * 0x04C11DB7, init 0, no final XOR yet. `register` is the value returned for
 * the preceding chunk (0 to start); finish with cksumFinish().
 */
export function cksumUpdate (data: Uint8Array, register = 0): number {
  const n = data.length
  const end8 = n - (n & 7)
  let crc = register
  let i = 0
  for (; i < end8; i += 8) {
    crc ^= (data[i]! << 24) | (data[i + 1]! << 16) | (data[i + 2]! << 8) | data[i + 3]!
    crc = K7[crc >>> 24]! ^ K6[(crc >>> 16) & 0xff]! ^ K5[(crc >>> 8) & 0xff]! ^ K4[crc & 0xff]! ^
      K3[data[i + 4]!]! ^ K2[data[i + 5]!]! ^ K1[data[i + 6]!]! ^ K0[data[i + 7]!]!
  }
  for (; i < n; i++) crc = (crc << 8) ^ K0[(crc >>> 24) ^ data[i]!]!
  return crc >>> 0
}

/**
 * POSIX cksum's final step: feed the total length in octets through the CRC,
 * least significant octet first and only as many octets as it needs (none
 * for an empty input), then complement. check("123456789") = 930766865.
 * `length` may exceed 2^32, so it is split by division, not bit operations.
 */
export function cksumFinish (register: number, length: number): number {
  let crc = register
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) {
    crc = (crc << 8) ^ K0[(crc >>> 24) ^ (rest % 256)]!
  }
  return ~crc >>> 0
}

const ADLER_BASE = 65521
// zlib's NMAX (5552) keeps b within 32 unsigned bits; 3848 = 8 × 481 keeps it
// below 2^31 from b = BASE - 1, so the sums stay V8 small integers.
const ADLER_NMAX = 3848

/**
 * Adler-32 (RFC 1950 §8.2): a = 1 + Σ bytes, b = Σ a, both mod 65521, value
 * (b << 16) | a. `previous` is the value returned for the preceding chunk
 * (1 to start). check("Wikipedia") = 0x11E60398.
 */
export function adler32 (data: Uint8Array, previous = 1): number {
  const n = data.length
  let a = previous & 0xffff
  let b = previous >>> 16
  let i = 0
  while (i < n) {
    const end = Math.min(i + ADLER_NMAX, n)
    const end8 = end - ((end - i) & 7)
    // Eight bytes per step: b gains 8a plus each byte weighted by how many of
    // the eight running sums it enters. This is the same arithmetic as the
    // one-byte loop, but with a shorter dependency chain.
    for (; i < end8; i += 8) {
      const d0 = data[i]!
      const d1 = data[i + 1]!
      const d2 = data[i + 2]!
      const d3 = data[i + 3]!
      const d4 = data[i + 4]!
      const d5 = data[i + 5]!
      const d6 = data[i + 6]!
      const d7 = data[i + 7]!
      b += 8 * a + 8 * d0 + 7 * d1 + 6 * d2 + 5 * d3 + 4 * d4 + 3 * d5 + 2 * d6 + d7
      a += d0 + d1 + d2 + d3 + d4 + d5 + d6 + d7
    }
    for (; i < end; i++) {
      a += data[i]!
      b += a
    }
    a %= ADLER_BASE
    b %= ADLER_BASE
  }
  return ((b << 16) | a) >>> 0
}

/**
 * BSD `sum` (GNU `sum -r`, the historical Unix default): a 16-bit checksum,
 * rotated right by one bit before each byte is added. `previous` is the value
 * returned for the preceding chunk (0 to start). check("123456789") = 53615.
 */
export function bsdSum (data: Uint8Array, previous = 0): number {
  const n = data.length
  let s = previous
  for (let i = 0; i < n; i++) s = (((s >>> 1) | ((s & 1) << 15)) + data[i]!) & 0xffff
  return s
}
