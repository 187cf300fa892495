import { test } from 'tap'
import * as crypto from 'node:crypto'
import { ALGORITHMS, base64Digester, computeDigest, createDigester, isDigestAlgorithm } from '../../lib/core/algorithms'
import { adler32, bsdSum, cksumFinish, cksumUpdate, crc32c } from '../../lib/core/checksums'
import type { DigestAlgorithm } from '../../types/index'

const KEYS: DigestAlgorithm[] = ['sha-256', 'sha-512', 'md5', 'sha', 'unixsum', 'unixcksum', 'adler', 'crc32c']
const NODE_NAMES: Partial<Record<DigestAlgorithm, string>> = { 'sha-256': 'sha256', 'sha-512': 'sha512', md5: 'md5', sha: 'sha1' }

const b64 = (buf: Buffer): string => buf.toString('base64')

// ---------------------------------------------------------------------------
// Obviously-correct references: one bit or one byte at a time, straight from
// the definitions in RFC 9530 notes §3. Slow, so used on small inputs only.

function refCrc32c (data: Uint8Array): number {
  let crc = 0xFFFFFFFF
  for (const byte of data) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = (crc & 1) ? (crc >>> 1) ^ 0x82F63B78 : crc >>> 1
  }
  return (crc ^ 0xFFFFFFFF) >>> 0
}

function refCrcMsb (register: number, data: Iterable<number>): number {
  let crc = register
  for (const byte of data) {
    crc ^= byte << 24
    for (let k = 0; k < 8; k++) crc = (crc & 0x80000000) ? (crc << 1) ^ 0x04C11DB7 : crc << 1
  }
  return crc >>> 0
}

/** The length as octets, least significant first, as few as needed. */
function lengthOctets (length: number): number[] {
  const out: number[] = []
  for (let n = length; n > 0; n = Math.floor(n / 256)) out.push(n % 256)
  return out
}

function refCksum (data: Uint8Array): number {
  return ~refCrcMsb(refCrcMsb(0, data), lengthOctets(data.length)) >>> 0
}

function refAdler (data: Uint8Array): number {
  let a = 1
  let b = 0
  for (const byte of data) {
    a = (a + byte) % 65521
    b = (b + a) % 65521
  }
  return ((b * 65536) + a)
}

function refSum (data: Uint8Array): number {
  let s = 0
  for (const byte of data) {
    s = (s >> 1) + ((s & 1) << 15)
    s = (s + byte) & 0xFFFF
  }
  return s
}

// ---------------------------------------------------------------------------
// Inputs

/** The 1 MiB pattern input: byte i = (i * 31) mod 251. */
const MIB = Buffer.alloc(1024 * 1024)
for (let i = 0; i < MIB.length; i++) MIB[i] = (i * 31) % 251

/** mulberry32: a tiny seeded PRNG, so random splits are reproducible. */
function prng (seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6D2B79F5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Cut `length` into chunk sizes: a repeated size, or seeded random sizes. */
function fixedSplit (length: number, size: number): number[] {
  const sizes: number[] = []
  for (let left = length; left > 0; left -= size) sizes.push(Math.min(size, left))
  return sizes
}

function randomSplit (length: number, seed: number, max: number): number[] {
  const random = prng(seed)
  const sizes: number[] = []
  for (let left = length; left > 0;) {
    const size = Math.min(left, Math.floor(random() * max))
    sizes.push(size) // zero-length chunks included on purpose
    left -= size
  }
  return sizes
}

/** Feed `data` to a digester in `sizes` chunks, rotating Buffer / Uint8Array views. */
function digestInChunks (algorithm: DigestAlgorithm, data: Buffer, sizes: number[]): Buffer {
  const digester = createDigester(algorithm)
  let offset = 0
  sizes.forEach((size, n) => {
    const chunk = data.subarray(offset, offset + size)
    digester.update(n % 2 === 0 ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    offset += size
  })
  return digester.digest()
}

// ---------------------------------------------------------------------------

test('ALGORITHMS: the eight IANA keys in order, with status and length in octets', async (t) => {
  t.same([...ALGORITHMS.keys()], KEYS)
  t.same([...ALGORITHMS.values()], [
    { key: 'sha-256', status: 'active', length: 32 },
    { key: 'sha-512', status: 'active', length: 64 },
    { key: 'md5', status: 'deprecated', length: 16 },
    { key: 'sha', status: 'deprecated', length: 20 },
    { key: 'unixsum', status: 'deprecated', length: 2 },
    { key: 'unixcksum', status: 'deprecated', length: 4 },
    { key: 'adler', status: 'deprecated', length: 4 },
    { key: 'crc32c', status: 'deprecated', length: 4 }
  ])
  for (const [key, info] of ALGORITHMS) {
    t.equal(info.key, key)
    t.ok(Object.isFrozen(info), `${key} entry is frozen`)
    t.equal(computeDigest(key, 'x').length, info.length, `${key} digests are ${info.length} octets`)
    t.equal(createDigester(key).digest().length, info.length)
  }
})

test('isDigestAlgorithm', async (t) => {
  for (const key of KEYS) t.equal(isDigestAlgorithm(key), true, key)
  const others: unknown[] = [
    'SHA-256', 'Sha-512', 'MD5', 'sha256', 'sha-1', 'sha1', 'md4', 'crc32', 'adler32', 'id-sha-256',
    '', ' sha-256', 'sha-256 ', 'constructor', '__proto__', 'toString', 'hasOwnProperty',
    undefined, null, 0, 256, true, {}, ['sha-256'], Object('sha-256'), Symbol('sha-256')
  ]
  for (const key of others) t.equal(isDigestAlgorithm(key), false, String(key))
})

test('RFC 9530 Appendix D samples over {"hello": "world"}', async (t) => {
  const input = '{"hello": "world"}'
  t.equal(Buffer.byteLength(input), 18, '18 bytes, no trailing newline')
  const samples: Record<DigestAlgorithm, string> = {
    'sha-512': 'WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==',
    'sha-256': 'X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=',
    md5: 'Sd/dVLAcvNLSq16eXua5uQ==',
    sha: '07CavjDP4u3/TungoUHJO/Wzr4c=',
    unixsum: 'GQU=',
    unixcksum: '7zsHAA==',
    adler: 'OZkGFw==',
    crc32c: 'Q3lHIA=='
  }
  for (const key of KEYS) {
    t.equal(b64(computeDigest(key, input)), samples[key], `${key} one-shot, string`)
    t.equal(b64(computeDigest(key, Buffer.from(input))), samples[key], `${key} one-shot, Buffer`)
    t.equal(b64(createDigester(key).update(input).digest()), samples[key], `${key} incremental`)
  }
  // The checksums' numeric values, read back big-endian (RFC 9530 Appendix D).
  t.equal(computeDigest('unixsum', input).readUInt16BE(0), 6405)
  t.equal(computeDigest('unixcksum', input).readUInt32BE(0), 4013623040)
  t.equal(computeDigest('adler', input).readUInt32BE(0), 0x39990617)
  t.equal(computeDigest('crc32c', input).readUInt32BE(0), 0x43794720)
})

test('empty input: fixed-width values with leading zero octets', async (t) => {
  const empty: Record<DigestAlgorithm, string> = {
    'sha-256': '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=',
    'sha-512': 'z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==',
    md5: '1B2M2Y8AsgTpgAmY7PhCfg==',
    sha: '2jmj7l5rSw0yVb/vlWAYkK/YBwk=',
    unixsum: 'AAA=',
    unixcksum: '/////w==',
    adler: 'AAAAAQ==',
    crc32c: 'AAAAAA=='
  }
  for (const key of KEYS) {
    t.equal(b64(computeDigest(key, '')), empty[key], `${key} of ''`)
    t.equal(b64(computeDigest(key, Buffer.alloc(0))), empty[key], `${key} of an empty Buffer`)
    t.equal(b64(computeDigest(key, new Uint8Array(0))), empty[key], `${key} of an empty Uint8Array`)
    t.equal(b64(createDigester(key).digest()), empty[key], `${key} without update()`)
    t.equal(b64(createDigester(key).update('').update(Buffer.alloc(0)).digest()), empty[key], `${key} after empty updates`)
  }
})

test('check values', async (t) => {
  const digits = Buffer.from('123456789')
  t.equal(crc32c(digits), 0xE3069283)
  t.equal(cksumFinish(cksumUpdate(digits), digits.length), 930766865)
  t.equal(bsdSum(digits), 53615)
  t.equal(adler32(Buffer.from('Wikipedia')), 0x11E60398)
  t.equal(computeDigest('crc32c', '123456789').readUInt32BE(0), 0xE3069283)
  t.equal(computeDigest('unixcksum', '123456789').readUInt32BE(0), 930766865)
  t.equal(computeDigest('unixsum', '123456789').readUInt16BE(0), 53615)
  t.equal(computeDigest('adler', 'Wikipedia').readUInt32BE(0), 0x11E60398)

  // RFC 3720 §B.4 CRC-32C vectors (the RFC lists the octets little-endian).
  const ascending = Buffer.from(Array.from({ length: 32 }, (_, i) => i))
  t.equal(crc32c(Buffer.alloc(32)), 0x8A9136AA, '32 zero octets')
  t.equal(crc32c(Buffer.alloc(32, 0xFF)), 0x62A8AB43, '32 0xFF octets')
  t.equal(crc32c(ascending), 0x46DD794E, 'ascending 0..31')
  t.equal(crc32c(Buffer.from(ascending).reverse()), 0x113FDB5C, 'descending 31..0')
})

test('1 MiB pattern input: incremental equals one-shot for every chunking', async (t) => {
  t.equal(b64(computeDigest('sha-256', MIB)), 'NheGA5DOmP40wbuJOC6nEi07aJAGnjCgeIkkkroMd00=')
  const splits: Array<[string, number[]]> = [
    ['1-byte chunks', fixedSplit(MIB.length, 1)],
    ['7-byte chunks', fixedSplit(MIB.length, 7)],
    ['4095-byte chunks', fixedSplit(MIB.length, 4095)],
    ['65537-byte chunks', fixedSplit(MIB.length, 65537)],
    ['one chunk then a zero-length one', [MIB.length, 0]],
    ['a zero-length chunk first', [0, 3, 0, MIB.length - 3]],
    ['random up to 64 KiB (seed 1)', randomSplit(MIB.length, 1, 65536)],
    ['random up to 100 bytes (seed 2)', randomSplit(MIB.length, 2, 100)],
    ['random up to 9000 bytes (seed 3)', randomSplit(MIB.length, 3, 9000)]
  ]
  for (const key of KEYS) {
    const expected = b64(computeDigest(key, MIB))
    for (const [name, sizes] of splits) {
      t.equal(b64(digestInChunks(key, MIB, sizes)), expected, `${key}: ${name}`)
    }
  }
})

test('strings are digested as their UTF-8 octets', async (t) => {
  const text = 'héllo wörld, €5, 𝄞 — '.repeat(500)
  const bytes = Buffer.from(text, 'utf8')
  const pieces = text.match(/.{1,37}/gsu)!
  t.ok(pieces.length > 100)
  for (const key of KEYS) {
    const expected = b64(computeDigest(key, bytes))
    t.equal(b64(computeDigest(key, text)), expected, `${key} one-shot`)
    t.equal(b64(computeDigest(key, new Uint8Array(bytes))), expected, `${key} one-shot, Uint8Array`)
    const digester = createDigester(key)
    for (const piece of pieces) digester.update(piece)
    t.equal(b64(digester.digest()), expected, `${key} from string chunks`)
    const mixed = createDigester(key)
    pieces.forEach((piece, n) => mixed.update(n % 3 === 0 ? piece : n % 3 === 1 ? Buffer.from(piece) : new Uint8Array(Buffer.from(piece))))
    t.equal(b64(mixed.digest()), expected, `${key} from string, Buffer and Uint8Array chunks`)
  }
})

test('the hashes match node:crypto createHash', async (t) => {
  for (const [key, name] of Object.entries(NODE_NAMES) as Array<[DigestAlgorithm, string]>) {
    for (const data of [MIB, MIB.subarray(0, 100), MIB.subarray(1, 1 + 65536)]) {
      const expected = crypto.createHash(name).update(data).digest()
      t.same(computeDigest(key, data), expected, `${key} one-shot, ${data.length} octets`)
      t.same(createDigester(key).update(data).digest(), expected, `${key} incremental, ${data.length} octets`)
    }
  }
})

test('the checksums match bit-by-bit reference implementations', async (t) => {
  const inputs: Buffer[] = [MIB.subarray(0, 64 * 1024), MIB.subarray(13, 13 + 64 * 1024 + 5), Buffer.alloc(10000, 0xFF)]
  // Every length from 0 to 40 exercises the eight-octet loops and their tails.
  for (let n = 0; n <= 40; n++) inputs.push(MIB.subarray(1000, 1000 + n))
  let agreed = 0
  for (const data of inputs) {
    const ok =
      computeDigest('crc32c', data).readUInt32BE(0) === refCrc32c(data) &&
      computeDigest('unixcksum', data).readUInt32BE(0) === refCksum(data) &&
      computeDigest('adler', data).readUInt32BE(0) === refAdler(data) &&
      computeDigest('unixsum', data).readUInt16BE(0) === refSum(data)
    if (ok) agreed++
    else t.fail(`mismatch for ${data.length} octets`)
  }
  t.equal(agreed, inputs.length, `all four agree on ${inputs.length} inputs`)
})

test('chained checksum functions continue from the previous value', async (t) => {
  const a = MIB.subarray(0, 5000)
  const b = MIB.subarray(5000, 12345)
  const whole = MIB.subarray(0, 12345)
  t.equal(crc32c(b, crc32c(a)), crc32c(whole))
  t.equal(adler32(b, adler32(a)), adler32(whole))
  t.equal(bsdSum(b, bsdSum(a)), bsdSum(whole))
  t.equal(cksumFinish(cksumUpdate(b, cksumUpdate(a)), whole.length), cksumFinish(cksumUpdate(whole), whole.length))
  // Adler-32 at its largest starting sums (a = b = 65520) over 0xFF octets:
  // the worst case for the blocked sums.
  const ones = Buffer.alloc(20000, 0xFF)
  let a1 = 65520
  let b1 = 65520
  for (const byte of ones) {
    a1 = (a1 + byte) % 65521
    b1 = (b1 + a1) % 65521
  }
  t.equal(adler32(ones, (65520 * 65536) + 65520), (b1 * 65536) + a1)
})

test('cksum appends lengths beyond 32 bits correctly', async (t) => {
  for (const length of [0, 1, 255, 256, 65535, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 0x0102, Number.MAX_SAFE_INTEGER]) {
    const register = 0x12345678
    t.equal(cksumFinish(register, length), ~refCrcMsb(register, lengthOctets(length)) >>> 0, `length ${length}`)
  }
  t.same(lengthOctets(2 ** 40 + 0x0102), [0x02, 0x01, 0, 0, 0, 0x01])
})

test('unknown algorithms throw FST_DIGEST_UNKNOWN_ALGORITHM', async (t) => {
  for (const name of ['md4', 'SHA-256', '', 'sha256', 'sha-1', 'id-sha-256', 'constructor', '__proto__']) {
    const key = name as DigestAlgorithm
    for (const [fn, call] of [['createDigester', () => createDigester(key)], ['computeDigest', () => computeDigest(key, 'x')]] as const) {
      t.throws(call, { code: 'FST_DIGEST_UNKNOWN_ALGORITHM', statusCode: 500 }, `${fn}(${JSON.stringify(name)})`)
      try {
        call()
      } catch (err) {
        t.ok(err instanceof TypeError)
        t.match((err as Error).message, `"${name}"`)
      }
    }
  }
  t.throws(() => createDigester(undefined as unknown as DigestAlgorithm), { code: 'FST_DIGEST_UNKNOWN_ALGORITHM' })
})

test('digester lifecycle: chaining, repeated digest(), update() after digest()', async (t) => {
  for (const key of KEYS) {
    const digester = createDigester(key)
    t.equal(digester.algorithm, key)
    t.equal(digester.update('a'), digester, `${key} update() returns the digester`)
    const first = digester.digest()
    const second = digester.digest()
    t.same(second, first, `${key} digest() again returns the same octets`)
    t.not(second, first, `${key} ... as a new Buffer`)
    first.fill(0)
    t.same(digester.digest(), computeDigest(key, 'a'), `${key} mutating a result does not change the digester`)
    t.throws(() => digester.update('b'), /cannot take more data after digest\(\)/, `${key} update() after digest() throws`)
    t.same(digester.digest(), computeDigest(key, 'a'), `${key} still finalised with the old value`)
  }
})

test('data that is not a string, Buffer or Uint8Array is a TypeError', async (t) => {
  for (const key of KEYS) {
    for (const bad of [123, null, {}, [1, 2, 3]]) {
      const data = bad as unknown as string
      t.throws(() => computeDigest(key, data), TypeError, `${key} computeDigest(${JSON.stringify(bad)})`)
      t.throws(() => createDigester(key).update(data), TypeError, `${key} update(${JSON.stringify(bad)})`)
    }
  }
})

test('base64Digester: the base64 of computeDigest, the algorithm looked up once', async (t) => {
  const data = Buffer.from('{"hello": "world"}')
  for (const key of ALGORITHMS.keys()) {
    const digest = base64Digester(key)
    t.equal(digest(data), b64(computeDigest(key, data)), key)
    t.equal(digest('{"hello": "world"}'), b64(computeDigest(key, data)), `${key}, a string`)
    t.equal(digest(''), b64(computeDigest(key, '')), `${key}, empty`)
  }
  t.throws(() => base64Digester('sha-1' as DigestAlgorithm), { code: 'FST_DIGEST_UNKNOWN_ALGORITHM' })
})
