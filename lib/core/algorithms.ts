// The RFC 9530 §5 algorithm registry and the hashing behind each key.
//
// Digests are raw octets, what a Byte Sequence carries (RFC 9530 §2, §3,
// Appendix D). The checksums become big-endian octets of a fixed width (2 for
// unixsum, 4 for the others): the RFC does not state the width, but Appendix
// D's vectors keep leading zero octets (unixsum `GQU=` is 6405; of empty
// input, `AAA=`).
import { createHash, hash, type Hash } from 'node:crypto'
import type { ALGORITHMS as PublicAlgorithms, DigestAlgorithm, Digester } from '../../types/index'
import { FST_DIGEST_UNKNOWN_ALGORITHM } from './errors'
import { adler32, bsdSum, cksumFinish, cksumUpdate, crc32c } from './checksums'

type Status = (typeof PublicAlgorithms extends ReadonlyMap<DigestAlgorithm, infer Info> ? Info : never)['status']
type Data = Buffer | Uint8Array | string

/** A checksum: its state before any data, a chunk folded in, and state plus length → its value. */
interface Checksum {
  readonly start: number
  readonly update: (data: Uint8Array, state: number) => number
  readonly finish: (state: number, length: number) => number
}

interface Entry { readonly length: number, readonly hash?: string, readonly checksum?: Checksum }

const done = (state: number): number => state

// The IANA "Hash Algorithms for HTTP Digest Fields" registry (RFC 9530 §5,
// §7.2), in the order ALGORITHMS keeps: sha-256 first, then sha-512, then the
// deprecated keys in registry order. `sha` is SHA-1 (RFC 3174).
const REGISTRY: ReadonlyArray<readonly [DigestAlgorithm, Status, Entry]> = [
  ['sha-256', 'active', { length: 32, hash: 'sha256' }],
  ['sha-512', 'active', { length: 64, hash: 'sha512' }],
  ['md5', 'deprecated', { length: 16, hash: 'md5' }],
  ['sha', 'deprecated', { length: 20, hash: 'sha1' }],
  ['unixsum', 'deprecated', { length: 2, checksum: { start: 0, update: bsdSum, finish: done } }],
  ['unixcksum', 'deprecated', { length: 4, checksum: { start: 0, update: cksumUpdate, finish: cksumFinish } }],
  ['adler', 'deprecated', { length: 4, checksum: { start: 1, update: adler32, finish: done } }],
  ['crc32c', 'deprecated', { length: 4, checksum: { start: 0, update: crc32c, finish: done } }]
]

/** The registry keys in order, each mapped to a frozen `{ key, status, length }` (length in octets). */
export const ALGORITHMS: typeof PublicAlgorithms = new Map(REGISTRY.map(([key, status, { length }]) =>
  [key, Object.freeze({ key, status, length })]))

const ENTRIES: ReadonlyMap<DigestAlgorithm, Entry> = new Map(REGISTRY.map(([key, , entry]) => [key, entry]))

/** True for the eight registry keys, compared exactly (keys are lowercase tokens). */
export function isDigestAlgorithm (key: unknown): key is DigestAlgorithm {
  return ENTRIES.has(key as DigestAlgorithm)
}

function lookup (algorithm: DigestAlgorithm): Entry {
  const entry = ENTRIES.get(algorithm)
  if (entry === undefined) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(algorithm))
  return entry
}

/** Checksums work on bytes; strings are UTF-8, as node:crypto reads them. */
function toBytes (data: Data): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (data instanceof Uint8Array) return data
  throw new TypeError('The data to digest must be a string, a Buffer or a Uint8Array')
}

function toOctets (value: number, width: number): Buffer {
  const out = Buffer.allocUnsafe(width)
  out.writeUIntBE(value, 0, width)
  return out
}

/**
 * Digest a whole payload at once, as raw octets. Throws
 * FST_DIGEST_UNKNOWN_ALGORITHM for keys outside the registry (case-sensitive).
 * crypto.hash() (Node.js 20.12 on, hence `engines`) skips the Hash object; its
 * latin1 output turned back into octets is exact (one code unit per octet) and
 * cheaper than its 'buffer' output (docs/benchmarks.md).
 */
export function computeDigest (algorithm: DigestAlgorithm, data: Data): Buffer {
  const { length, hash: name, checksum } = lookup(algorithm)
  if (checksum === undefined) return Buffer.from(hash(name as string, data, 'binary'), 'binary')
  const bytes = toBytes(data)
  return toOctets(checksum.finish(checksum.update(bytes, checksum.start), bytes.length), length)
}

/**
 * computeDigest() as base64 (a Byte Sequence's content) for one algorithm,
 * looked up once (per route) rather than per call; no octets in between for a hash.
 */
export function base64Digester (algorithm: DigestAlgorithm): (data: Data) => string {
  const { hash: name } = lookup(algorithm)
  return name === undefined
    ? (data) => computeDigest(algorithm, data).toString('base64')
    : (data) => hash(name, data, 'base64')
}

/**
 * The Digester contract: digest() finalises on the first call and later calls
 * return a new copy of the same octets (node:crypto's Hash throws instead);
 * update() after digest() throws.
 */
class IncrementalDigester implements Digester {
  readonly algorithm: DigestAlgorithm
  readonly #entry: Entry
  readonly #hash: Hash | null
  #state: number
  #length = 0
  #result: Buffer | null = null

  constructor (algorithm: DigestAlgorithm, entry: Entry) {
    this.algorithm = algorithm
    this.#entry = entry
    this.#hash = entry.hash === undefined ? null : createHash(entry.hash)
    this.#state = entry.checksum?.start ?? 0
  }

  update (data: Data): this {
    if (this.#result !== null) throw new Error(`The ${this.algorithm} digester cannot take more data after digest()`)
    if (this.#hash !== null) {
      this.#hash.update(data)
    } else {
      const bytes = toBytes(data)
      this.#state = (this.#entry.checksum as Checksum).update(bytes, this.#state)
      this.#length += bytes.length
    }
    return this
  }

  digest (): Buffer {
    this.#result ??= this.#hash !== null
      ? this.#hash.digest()
      : toOctets((this.#entry.checksum as Checksum).finish(this.#state, this.#length), this.#entry.length)
    return Buffer.from(this.#result)
  }
}

/**
 * An incremental digester for one algorithm: chunks through update()
 * (strings are UTF-8), the raw octets from digest(). Throws
 * FST_DIGEST_UNKNOWN_ALGORITHM for keys outside the registry.
 */
export function createDigester (algorithm: DigestAlgorithm): Digester {
  return new IncrementalDigester(algorithm, lookup(algorithm))
}
