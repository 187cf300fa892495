// The four deprecated RFC 9530 §5 checksums, incremental: each takes the value returned
// for the previous chunk. Own code rather than a library: docs/design.md ("Algorithms"). The `!`
// only satisfy noUncheckedIndexedAccess: every index is a byte, or below data.length.

type SliceTables = [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array]

/** A byte's CRC-32 register, one bit at a time, reflected (LSB-first) or not. */
function byteRegister (n: number, poly: number, reflected: boolean): number {
  let c = reflected ? n : n << 24
  for (let k = 0; k < 8; k++) {
    if (reflected) c = (c & 1) ? (c >>> 1) ^ poly : c >>> 1
    else c = (c & 0x80000000) ? (c << 1) ^ poly : c << 1
  }
  return c
}

// Slice-by-8 tables of a CRC-32, reflected (LSB-first) or not: slice s maps a byte to its
// contribution after s more zero bytes, a 32-bit register value.
function sliceTables (poly: number, reflected: boolean): SliceTables {
  const table = new Int32Array(8 * 256)
  for (let n = 0; n < 256; n++) table[n] = byteRegister(n, poly, reflected)
  for (let n = 0; n < 256; n++) {
    let c = table[n]!
    for (let s = 1; s < 8; s++) {
      c = reflected ? (c >>> 8) ^ table[c & 0xff]! : (c << 8) ^ table[c >>> 24]!
      table[s * 256 + n] = c
    }
  }
  return [0, 1, 2, 3, 4, 5, 6, 7].map((s) => table.subarray(s * 256, s * 256 + 256)) as SliceTables
}

const [C0, C1, C2, C3, C4, C5, C6, C7] = sliceTables(0x82F63B78, true)
const [K0, K1, K2, K3, K4, K5, K6, K7] = sliceTables(0x04C11DB7, false)

/** CRC-32C (RFC 9260 Appendix A): reflected 0x82F63B78, init and xorout 0xFFFFFFFF; 0 to start. */
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

/** POSIX cksum's running CRC register: MSB-first 0x04C11DB7, init 0; finish with cksumFinish(). */
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

// POSIX cksum's end: the length in octets through the CRC, least significant octet first and
// only as many as it needs, then complemented. It may exceed 2^32: split by division.
export function cksumFinish (register: number, length: number): number {
  let crc = register
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) {
    crc = (crc << 8) ^ K0[(crc >>> 24) ^ (rest % 256)]!
  }
  return ~crc >>> 0
}

const ADLER_BASE = 65521
// Sums reduced at least every 5552 bytes, zlib's NMAX: b stays below 2^32 (zlib adler32.c).
const ADLER_NMAX = 5552

/** Adler-32 (RFC 1950 §8.2): a = 1 + Σ bytes, b = Σ a, both mod 65521, (b << 16) | a; 1 to start. */
export function adler32 (data: Uint8Array, previous = 1): number {
  const n = data.length
  let a = previous & 0xffff
  let b = previous >>> 16
  let i = 0
  while (i < n) {
    const end = Math.min(i + ADLER_NMAX, n)
    const end8 = end - ((end - i) & 7)
    // Eight bytes per step: b gains 8a plus each byte weighted by the running sums it enters.
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

/** BSD `sum` (GNU `sum -r`): 16 bits, rotated right by one before each byte is added; 0 to start. */
export function bsdSum (data: Uint8Array, previous = 0): number {
  const n = data.length
  let s = previous
  for (let i = 0; i < n; i++) s = (((s >>> 1) | ((s & 1) << 15)) + data[i]!) & 0xffff
  return s
}
