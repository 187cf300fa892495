// Content codings decoded on the side with node:zlib, for the digests of the decoded content
// (a default-mode Repr-Digest, an Unencoded-Digest); the reader still gets the bytes as sent.
import * as zlib from 'node:zlib'
import { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults } from './digest-stream'

type Factory = (options: { chunkSize?: number, writableHighWaterMark?: number }) => Transform
type Decode = (data: Buffer, options: zlib.ZlibOptions) => Buffer

// "deflate" is zlib data (RFC 9110 §8.4.1.2), yet fetch reads raw deflate too (undici
// lib/web/fetch/util.js): a zlib header has method 8 in its first octet (RFC 1950 §2.2).
const hasZlibHeader = (data: Uint8Array): boolean => ((data[0] as number) & 0x0f) === 0x08

const eitherDeflate: Factory = ({ chunkSize, writableHighWaterMark }) => {
  let inner: Transform | null = null
  return new Transform({
    writableHighWaterMark,
    transform (chunk: Buffer, _encoding, callback) {
      inner ??= (hasZlibHeader(chunk) ? zlib.createInflate : zlib.createInflateRaw)({ chunkSize })
        .on('data', (data: Buffer) => this.push(data)).on('error', (err) => this.destroy(err))
      inner.write(chunk, callback)
    },
    flush (callback) {
      if (inner === null) return callback()
      inner.once('end', () => callback()).end()
    },
    destroy (err, callback) {
      inner?.destroy()
      callback(err)
    }
  })
}

const inflateEither: Decode = (data, options) =>
  (hasZlibHeader(data) ? zlib.inflateSync : zlib.inflateRawSync)(data, options)

// Each coding's stream decoder and whole-body one (the latter reads raw deflate too). zstd
// (RFC 8878) where node:zlib has it (Node.js 22.15 and 23.8 on).
const zstd = zlib as unknown as { createZstdDecompress?: Factory, zstdDecompressSync: Decode }
const DECODERS = new Map(([
  ['gzip', [zlib.createGunzip, zlib.gunzipSync]], ['x-gzip', [zlib.createGunzip, zlib.gunzipSync]],
  ['deflate', [zlib.createInflate, inflateEither]], ['br', [zlib.createBrotliDecompress, zlib.brotliDecompressSync]],
  ['zstd', [zstd.createZstdDecompress, zstd.zstdDecompressSync]]
] as Array<[string, [Factory | undefined, Decode]]>)
  .filter((entry): entry is [string, [Factory, Decode]] => entry[1][0] !== undefined))

/** The content codings decoded on the side (RFC 9110 §8.4.1). */
export const DECODABLE_CODINGS: readonly string[] = Object.freeze([...DECODERS.keys()])

/** At most this many codings are decoded, as fetch and curl do (curl's limit for CVE-2022-32206). */
export const MAX_CODINGS = 5

/** A Content-Encoding's codings, lowercased, as applied (`gzip, br`); null for none (absent, empty, `identity`). */
export function contentCoding (value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null
  if (!value.includes(',')) {
    // One coding, the usual field: no list made.
    const coding = value.trim().toLowerCase()
    return coding === '' || coding === 'identity' ? null : coding
  }
  const codings = value.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length === 0 ? null : codings.join(', ')
}

/**
 * contentCoding()'s codings, last applied first (RFC 9110 §8.4); null when one is not decoded here, or past
 * MAX_CODINGS.
 */
export function decodingOrder (coding: string): string[] | null {
  const codings = coding.split(', ').reverse()
  return codings.length > MAX_CODINGS || codings.some((c) => !DECODERS.has(c)) ? null : codings
}

/** The decoders in decoding order: coded bytes into the first, decoded ones out of the last. */
export type DecoderStages = readonly [Transform, ...Transform[]]

/**
 * The decoders of contentCoding()'s value, or null (decodingOrder()): zlib's chunk size, the first one's queue,
 * `deflate` raw too.
 */
export function createContentDecoders (
  coding: string,
  { chunkSize, queue, rawDeflate = false }: { chunkSize?: number, queue?: number, rawDeflate?: boolean } = {}
): DecoderStages | null {
  const order = decodingOrder(coding)
  if (order === null) return null
  return order.map((name, i) => {
    const create = name === 'deflate' && rawDeflate ? eitherDeflate : (DECODERS.get(name) as [Factory, Decode])[0]
    return create(i === 0 ? { chunkSize, writableHighWaterMark: queue } : { chunkSize })
  }) as unknown as DecoderStages
}

/**
 * A whole body of decodingOrder()'s codings decoded, each step capped at `max` bytes (past it node:zlib throws
 * ERR_BUFFER_TOO_LARGE); throws on bad data. `rawDeflate`: `deflate` read as raw deflate too, as fetch does.
 */
export function decodeWhole (codings: readonly string[], data: Buffer, max: number, rawDeflate = true): Buffer {
  return codings.reduce((out, c) => {
    const decode = c === 'deflate' && !rawDeflate ? zlib.inflateSync : (DECODERS.get(c) as [Factory, Decode])[1]
    return decode(out, { maxOutputLength: max })
  }, data)
}

// Decodes and hashes the decoded bytes, writes gathered up to `batch` bytes (a thread-pool round trip each); stops with
// 'too-large' once any decoder's output exceeds `limit`, 'invalid' on bad data, then drops input and answers waiting
// callbacks.
export class DecodingTap {
  readonly #stages: DecoderStages
  readonly #hasher: MultiDigester
  readonly #batchSize: number
  #batch: Uint8Array[] = []
  #batched = 0
  #pending: (() => void) | null = null
  #done: (() => void) | null = null
  #stopped = false
  digests: DigestResults | null = null
  failure: 'invalid' | 'too-large' | null = null

  constructor (stages: DecoderStages, algorithms: Iterable<DigestAlgorithm>, limit: number, batch = 0) {
    this.#stages = stages
    this.#hasher = new MultiDigester(algorithms)
    this.#batchSize = batch
    const last = stages[stages.length - 1] as Transform
    // pipe() carries data, backpressure and the end between decoders, not errors (`on`: one may fail after its end).
    stages.forEach((stage, i) => {
      let bytes = 0
      stage.on('error', () => this.#stop('invalid')).on('data', (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes > limit) this.#stop('too-large')
        else if (stage === last) this.#hasher.update(chunk)
      })
      if (stage !== last) stage.pipe(stages[i + 1] as Transform)
    })
    // Held on the first decoder's queue only: a later full one pauses the pipe into it.
    stages[0].on('drain', () => this.#release())
    last.once('end', () => {
      this.digests = this.#hasher.digest()
      this.#stop(null)
    })
  }

  /** Whether it takes more now; if not, calls `next` once it does (or once stopped). */
  write (chunk: Uint8Array, next: (() => void) | null): boolean {
    if (this.#stopped) return true
    this.#batched += chunk.byteLength
    if (this.#batched < this.#batchSize) {
      this.#batch.push(chunk)
      return true
    }
    // A decoder can stop within the write (a synchronous stage's output past the limit): then the chunk was taken.
    if (this.#flush(chunk) || this.#stopped) return true
    this.#pending = next
    return false
  }

  /** Writes the batch and `last` as one buffer (`last` alone without a batch: no array touched). */
  #flush (last: Uint8Array | null): boolean {
    let data = last as Uint8Array
    if (this.#batch.length > 0) {
      if (last !== null) this.#batch.push(last)
      data = Buffer.concat(this.#batch, this.#batched)
      this.#batch = []
    }
    this.#batched = 0
    return this.#stages[0].write(data)
  }

  /** Calls `done` once decoded and hashed (or once stopped). */
  end (done: () => void): void {
    if (this.#stopped) return done()
    this.#done = done
    if (this.#batched > 0) this.#flush(null)
    this.#stages[0].end()
  }

  /** Stop without a result (neither digests nor failure). */
  destroy (): void {
    this.#stop(null)
  }

  #release (): void {
    const pending = this.#pending
    this.#pending = null
    pending?.()
  }

  #stop (failure: DecodingTap['failure']): void {
    if (this.#stopped) return
    this.#stopped = true
    this.failure = failure
    this.#batch.length = 0
    for (const stage of this.#stages) stage.destroy()
    this.#release()
    const done = this.#done
    this.#done = null
    done?.()
  }
}
