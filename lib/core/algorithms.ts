// The RFC 9530 §5 algorithm registry and the hashing behind each key. This
// module is pure: it does not import fastify or structured-headers.
//
// Every digest is returned as raw octets, because that is what a Byte Sequence
// carries (RFC 9530 §2, §3, Appendix D: "running the output bytes through Byte
// Sequence serialization"). The four checksums become big-endian, fixed-width
// octets: 2 for unixsum, 4 for unixcksum, adler and crc32c. The Appendix D
// samples decide this (unixsum `GQU=` is 0x1905 = 6405). The RFC does not
// state the width, but fixed width is the only reading under which values
// with leading zero octets (e.g. unixsum of empty input, `AAA=`) stay
// well-defined.
import { createHash, hash, type Hash } from 'node:crypto'
import type { ALGORITHMS as PublicAlgorithms, DigestAlgorithm, Digester } from '../../types/index'
import { FST_DIGEST_UNKNOWN_ALGORITHM } from './errors'
import { adler32, bsdSum, cksumFinish, cksumUpdate, crc32c } from './checksums'

type AlgorithmInfo = typeof PublicAlgorithms extends ReadonlyMap<DigestAlgorithm, infer Info> ? Info : never
type Data = Buffer | Uint8Array | string

/** How a key is computed: a node:crypto hash, or one of lib/core/checksums.ts. */
type Implementation =
  | { readonly kind: 'hash', readonly name: string }
  | {
    readonly kind: 'checksum'
    /** The state before any data. */
    readonly start: number
    /** Folds a chunk into the state. */
    readonly update: (data: Uint8Array, state: number) => number
    /** State and total length in octets → the checksum's numeric value. */
    readonly finish: (state: number, length: number) => number
  }

const identity = (state: number): number => state

function nodeHash (name: string): Implementation {
  return { kind: 'hash', name }
}

function checksum (
  start: number,
  update: (data: Uint8Array, state: number) => number,
  finish: (state: number, length: number) => number = identity
): Implementation {
  return { kind: 'checksum', start, update, finish }
}

// The IANA "Hash Algorithms for HTTP Digest Fields" registry (RFC 9530 §5,
// §7.2): key, status, digest length in octets, implementation. The order is
// part of the API: sha-256 first (the usual default), then sha-512, then the
// deprecated keys in registry order.
const REGISTRY: ReadonlyArray<readonly [DigestAlgorithm, AlgorithmInfo['status'], number, Implementation]> = [
  ['sha-256', 'active', 32, nodeHash('sha256')],
  ['sha-512', 'active', 64, nodeHash('sha512')],
  ['md5', 'deprecated', 16, nodeHash('md5')],
  ['sha', 'deprecated', 20, nodeHash('sha1')], // `sha` is SHA-1 (RFC 3174)
  ['unixsum', 'deprecated', 2, checksum(0, bsdSum)],
  ['unixcksum', 'deprecated', 4, checksum(0, cksumUpdate, cksumFinish)],
  ['adler', 'deprecated', 4, checksum(1, adler32)],
  ['crc32c', 'deprecated', 4, checksum(0, crc32c)]
]

/**
 * The registry keys in order (sha-256, sha-512, md5, sha, unixsum,
 * unixcksum, adler, crc32c), each mapped to a frozen `{ key, status, length }`.
 * `length` is the digest size in octets. The Map is read-only by type
 * (ReadonlyMap); only its entries are frozen at run time.
 */
export const ALGORITHMS: typeof PublicAlgorithms = new Map(REGISTRY.map(([key, status, length]) =>
  [key, Object.freeze({ key, status, length })]))

interface Entry { readonly impl: Implementation, readonly length: number }
const IMPLEMENTATIONS: ReadonlyMap<DigestAlgorithm, Entry> = new Map(REGISTRY.map(([key, , length, impl]) =>
  [key, { impl, length }]))

/** True for the eight registry keys, compared exactly (keys are lowercase tokens). */
export function isDigestAlgorithm (key: unknown): key is DigestAlgorithm {
  return ALGORITHMS.has(key as DigestAlgorithm)
}

function lookup (algorithm: DigestAlgorithm): Entry {
  const entry = IMPLEMENTATIONS.get(algorithm)
  if (entry === undefined) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(algorithm))
  return entry
}

/** Checksums work on bytes; strings are hashed as UTF-8, like node:crypto does. */
function toBytes (data: Data): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8')
  if (data instanceof Uint8Array) return data
  throw new TypeError('The data to digest must be a string, a Buffer or a Uint8Array')
}

/** A checksum's value as `width` big-endian octets (RFC 9530 Appendix D). */
function toOctets (value: number, width: number): Buffer {
  const out = Buffer.allocUnsafe(width)
  out.writeUIntBE(value, 0, width)
  return out
}

// crypto.hash() (Node >= 20.12) skips the Hash object and is faster for
// small payloads (about 15 % at 100 B, §8 of the notes). Its 'buffer' output
// costs about 0.4 µs more per call than a latin1 ('binary') string turned back into
// octets (Node 20; docs/benchmarks.md, "Changes"), which matters on
// small responses; latin1 maps each octet to one code unit, so the round
// trip is exact. On older Node 20 releases, fall back to createHash().
const hashOnce: (name: string, data: Data) => Buffer = typeof hash === 'function'
  ? (name, data) => Buffer.from(hash(name, data, 'binary'), 'binary')
  : (name, data) => createHash(name).update(data).digest()

// The same one-shot hash with base64 output, for a value that is only
// serialized: no octets in between.
const hashOnceBase64: (name: string, data: Data) => string = typeof hash === 'function'
  ? (name, data) => hash(name, data, 'base64')
  : (name, data) => createHash(name).update(data).digest('base64')

/**
 * computeDigest() as base64 (the content of a Byte Sequence), for a digest
 * that is only serialized: the node:crypto algorithms skip the octets.
 */
export function computeDigestBase64 (algorithm: DigestAlgorithm, data: Data): string {
  const { impl } = lookup(algorithm)
  return impl.kind === 'hash' ? hashOnceBase64(impl.name, data) : computeDigest(algorithm, data).toString('base64')
}

/**
 * computeDigestBase64() for one algorithm, looked up once (per route)
 * instead of per call. Throws FST_DIGEST_UNKNOWN_ALGORITHM for keys outside
 * the registry.
 */
export function base64Digester (algorithm: DigestAlgorithm): (data: Data) => string {
  const { impl } = lookup(algorithm)
  if (impl.kind !== 'hash') return (data) => computeDigest(algorithm, data).toString('base64')
  const name = impl.name
  return (data) => hashOnceBase64(name, data)
}

/**
 * Digest a whole payload at once. Returns the raw octets (see the top of the
 * file for the checksum encoding). Throws FST_DIGEST_UNKNOWN_ALGORITHM for
 * keys outside the registry, which are case-sensitive.
 */
export function computeDigest (algorithm: DigestAlgorithm, data: Data): Buffer {
  const { impl, length } = lookup(algorithm)
  if (impl.kind === 'hash') return hashOnce(impl.name, data)
  const bytes = toBytes(data)
  return toOctets(impl.finish(impl.update(bytes, impl.start), bytes.length), length)
}

/**
 * The Digester contract. digest() finalises on the first call; later calls
 * return a new copy of the same octets, so callers may mutate what they get.
 * node:crypto's Hash throws on a second digest() instead. update() after
 * digest() throws an Error, for every algorithm.
 */
abstract class BaseDigester implements Digester {
  readonly algorithm: DigestAlgorithm
  #result: Buffer | null = null

  constructor (algorithm: DigestAlgorithm) {
    this.algorithm = algorithm
  }

  protected abstract write (data: Data): void
  protected abstract finish (): Buffer

  update (data: Data): this {
    if (this.#result !== null) {
      throw new Error(`The ${this.algorithm} digester cannot take more data after digest()`)
    }
    this.write(data)
    return this
  }

  digest (): Buffer {
    this.#result ??= this.finish()
    return Buffer.from(this.#result)
  }
}

class HashDigester extends BaseDigester {
  readonly #hash: Hash

  constructor (algorithm: DigestAlgorithm, name: string) {
    super(algorithm)
    this.#hash = createHash(name)
  }

  protected write (data: Data): void {
    this.#hash.update(data)
  }

  protected finish (): Buffer {
    return this.#hash.digest()
  }
}

class ChecksumDigester extends BaseDigester {
  readonly #impl: Extract<Implementation, { kind: 'checksum' }>
  readonly #width: number
  #state: number
  #length = 0

  constructor (algorithm: DigestAlgorithm, impl: Extract<Implementation, { kind: 'checksum' }>, width: number) {
    super(algorithm)
    this.#impl = impl
    this.#width = width
    this.#state = impl.start
  }

  protected write (data: Data): void {
    const bytes = toBytes(data)
    this.#state = this.#impl.update(bytes, this.#state)
    this.#length += bytes.length
  }

  protected finish (): Buffer {
    return toOctets(this.#impl.finish(this.#state, this.#length), this.#width)
  }
}

/**
 * An incremental digester for one algorithm: feed chunks with update() (strings
 * are UTF-8), read the raw octets with digest(). Throws
 * FST_DIGEST_UNKNOWN_ALGORITHM for keys outside the registry.
 */
export function createDigester (algorithm: DigestAlgorithm): Digester {
  const { impl, length } = lookup(algorithm)
  return impl.kind === 'hash'
    ? new HashDigester(algorithm, impl.name)
    : new ChecksumDigester(algorithm, impl, length)
}
