// The RFC 9530 §5 algorithm registry and the hashing behind each key. Digests are raw octets (§2); a checksum is
// big-endian of a fixed width, 2 octets for unixsum, 4 for the others, as Appendix D keeps leading zeros (unixsum
// `GQU=`).
import { createHash, hash, type Hash } from 'node:crypto'
import type { ALGORITHMS as PublicAlgorithms, DigestAlgorithm, Digester } from '../../types/index'
import { FST_DIGEST_UNKNOWN_ALGORITHM } from './errors'
import { adler32, bsdSum, cksumFinish, cksumUpdate, crc32c } from './checksums'

type Info = typeof PublicAlgorithms extends ReadonlyMap<DigestAlgorithm, infer I> ? I : never
type Data = Buffer | Uint8Array | string

type Update = (data: Uint8Array, state?: number) => number
const NO_BYTES = new Uint8Array(0)

/**
 * A node:crypto hash, or a checksum: `update` folds a chunk into its state (by default the start), `finish` (cksum)
 * state and length → value.
 */
interface Entry extends Omit<Info, 'key'> {
  readonly hash?: string
  readonly update?: Update
  readonly finish?: (state: number, length: number) => number
}

// The IANA "Hash Algorithms for HTTP Digest Fields" registry (RFC 9530 §5, §7.2): the
// active keys first, then the deprecated ones in registry order. `sha` is SHA-1 (RFC 3174).
const REGISTRY: ReadonlyMap<DigestAlgorithm, Entry> = new Map<DigestAlgorithm, Entry>([
  ['sha-256', { status: 'active', length: 32, hash: 'sha256' }],
  ['sha-512', { status: 'active', length: 64, hash: 'sha512' }],
  ['md5', { status: 'deprecated', length: 16, hash: 'md5' }],
  ['sha', { status: 'deprecated', length: 20, hash: 'sha1' }],
  ['unixsum', { status: 'deprecated', length: 2, update: bsdSum }],
  ['unixcksum', { status: 'deprecated', length: 4, update: cksumUpdate, finish: cksumFinish }],
  ['adler', { status: 'deprecated', length: 4, update: adler32 }],
  ['crc32c', { status: 'deprecated', length: 4, update: crc32c }]
])

/** The registry keys in order, each mapped to a frozen `{ key, status, length }` (length in octets). */
export const ALGORITHMS: typeof PublicAlgorithms = new Map([...REGISTRY].map(([key, { status, length }]) =>
  [key, Object.freeze({ key, status, length })]))

/** True for the eight registry keys, compared exactly (keys are lowercase tokens). */
export function isDigestAlgorithm (key: unknown): key is DigestAlgorithm {
  return REGISTRY.has(key as DigestAlgorithm)
}

function lookup (algorithm: DigestAlgorithm): Entry {
  const entry = REGISTRY.get(algorithm)
  if (entry === undefined) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(algorithm))
  return entry
}

/** Checksums work on bytes; strings are UTF-8, as node:crypto reads them. */
function toBytes (data: Data): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (data instanceof Uint8Array) return data
  throw new TypeError('The data to digest must be a string, a Buffer or a Uint8Array')
}

/** A checksum's value, as big-endian octets of its width. */
function checksumOctets ({ length: width, finish }: Entry, state: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(width)
  out.writeUIntBE(finish?.(state, length) ?? state, 0, width)
  return out
}

// A whole payload's digest; FST_DIGEST_UNKNOWN_ALGORITHM outside the registry. crypto.hash(): Node.js 20.12 on.
export function computeDigest (algorithm: DigestAlgorithm, data: Data): Buffer {
  const entry = lookup(algorithm)
  if (entry.update === undefined) return hash(entry.hash as string, data, 'buffer')
  const bytes = toBytes(data)
  return checksumOctets(entry, entry.update(bytes), bytes.length)
}

// computeDigest() as base64: a node:crypto hash (`name`) writes it directly, a checksum's octets are encoded.
function base64Digest (algorithm: DigestAlgorithm, name: string | undefined, data: Data): string {
  return name === undefined ? computeDigest(algorithm, data).toString('base64') : hash(name, data, 'base64')
}

/** computeDigest() as base64 for one algorithm; FST_DIGEST_UNKNOWN_ALGORITHM outside the registry. */
export function base64Digester (algorithm: DigestAlgorithm): (data: Data) => string {
  const name = lookup(algorithm).hash
  return (data) => base64Digest(algorithm, name, data)
}

/** computeDigest() as base64 text for each algorithm: what a request's claims are compared with (compare.ts). */
export function digestTexts (algorithms: Iterable<DigestAlgorithm>, data: Data): Map<DigestAlgorithm, string> {
  const texts = new Map<DigestAlgorithm, string>()
  for (const algorithm of algorithms) texts.set(algorithm, base64Digest(algorithm, lookup(algorithm).hash, data))
  return texts
}

/** digest() finalises once, later calls return a copy (node:crypto's Hash throws); update() after it throws. */
class IncrementalDigester implements Digester {
  readonly #entry: Entry
  readonly #hash: Hash | null
  #state: number
  #length = 0
  #result: Buffer | null = null

  constructor (readonly algorithm: DigestAlgorithm, entry: Entry) {
    this.#entry = entry
    this.#hash = entry.hash === undefined ? null : createHash(entry.hash)
    this.#state = entry.update?.(NO_BYTES) ?? 0
  }

  update (data: Data): this {
    if (this.#result !== null) throw new Error(`The ${this.algorithm} digester cannot take more data after digest()`)
    if (this.#hash !== null) {
      this.#hash.update(data)
    } else {
      const bytes = toBytes(data)
      this.#state = (this.#entry.update as Update)(bytes, this.#state)
      this.#length += bytes.length
    }
    return this
  }

  digest (): Buffer {
    this.#result ??= this.#hash !== null ? this.#hash.digest() : checksumOctets(this.#entry, this.#state, this.#length)
    return Buffer.from(this.#result)
  }
}

/** An incremental digester (strings are UTF-8); FST_DIGEST_UNKNOWN_ALGORITHM outside the registry. */
export function createDigester (algorithm: DigestAlgorithm): Digester {
  return new IncrementalDigester(algorithm, lookup(algorithm))
}
