// The default-mode reading of a coded response's Repr-Digest: the digest of
// the representation before content coding (the plugin's default mode, see
// the README's "Default and strict mode"). The coded bytes are decoded on
// the side with node:zlib and the decoded bytes hashed; what the caller
// receives is untouched. Content-Encoding lists the codings in the order
// they were applied (RFC 9110 §8.4), so a `gzip, br` body is decoded by a
// brotli decoder piped into a gunzip: one decoder per coding, the last
// applied first. zstd (RFC 8878) is decoded where node:zlib has it (Node.js
// 22.15 and 23.8 on); on Node.js 20 it is a coding not decoded here, like
// any other node:zlib lacks. Capped: past `limit` decoded bytes, or with a
// coding node:zlib does not have, the decoded reading is unknown (the digest cannot
// be checked, response-check.ts); on a decoding error in any of the decoders
// there is none (the content is not what its Content-Encoding says), and
// only the coded reading (RFC 9530 §3) can match.
import * as zlib from 'node:zlib'
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib'
import { Transform, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm } from '../../types/client'
import { MultiDigester, type DigestResults } from '../core/digest-stream'

/**
 * Whether deflate-coded bytes start with a zlib header: its first octet
 * (CMF) has compression method 8 in its low four bits (RFC 1950 §2.2).
 * "deflate" is the zlib format (RFC 9110 §8.4.1.2), but some servers send
 * the raw deflate data without it, and fetch decodes both (undici 7.30.2
 * lib/web/fetch/util.js, InflateStream): so does this reading, or it would
 * fail on bytes the caller's fetch reads fine.
 */
export function hasZlibHeader (data: Uint8Array): boolean {
  return ((data[0] as number) & 0x0f) === 0x08
}

/**
 * node:zlib's output chunks. Its default, 16 KiB, takes four round trips to
 * the thread pool (each a wake-up of a worker and of the event loop) for
 * each 64 KiB read from a socket; 64 KiB takes one.
 */
export const CHUNK_SIZE = 64 * 1024

/**
 * How much coded content the first decoder may queue before the response is
 * held (undici paused), and it is released only once that queue is empty
 * (its 'drain'): this is also the most content queued. undici 7.30.2 pauses
 * in the middle of what it read from the socket: it puts the rest back
 * (socket.unshift) and, on resume, takes the socket's whole buffer
 * (socket.read()), which has grown by a read meanwhile
 * (lib/dispatcher/client-h1.js, execute() and resume()). Held for every
 * 16 KiB chunk of a chunked response (node:zlib's default queue, 16 KiB),
 * that buffer would grow with the response, and a download would take time
 * quadratic in its size; held once per HOLD_SIZE, each resume consumes more
 * than was read.
 */
export const HOLD_SIZE = 1024 * 1024

/**
 * Coded content goes to the first decoder in writes of at least this many
 * bytes (chunks are gathered, then copied once): node:zlib makes at least one
 * round trip to the thread pool for each write, and a chunked response (16
 * KiB chunks from @fastify/compress) would otherwise make one per chunk.
 */
export const BATCH_SIZE = 256 * 1024

/** node:zlib's options, and the node:stream ones it passes on to its Transform. */
interface DecoderOptions { chunkSize: number, writableHighWaterMark?: number }

/** A "deflate" decoder: zlib or raw deflate, told by the first octet. */
class DeflateDecoder extends Transform {
  #inner: Transform | null = null
  readonly #chunkSize: number

  constructor ({ chunkSize, writableHighWaterMark }: DecoderOptions) {
    super({ writableHighWaterMark })
    this.#chunkSize = chunkSize
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.#inner === null) {
      // The first chunk is not empty: SideDecoder writes only non-empty
      // batches, and node:zlib pushes no empty chunks (lib/zlib.js,
      // processCallback: `if (have > 0)`) to a later decoder.
      const options = { chunkSize: this.#chunkSize }
      const inner = hasZlibHeader(chunk) ? createInflate(options) : createInflateRaw(options)
      inner.on('data', (data: Buffer) => this.push(data))
      inner.on('error', (err) => this.destroy(err))
      this.#inner = inner
    }
    this.#inner.write(chunk, callback)
  }

  override _flush (callback: TransformCallback): void {
    const inner = this.#inner
    if (inner === null) {
      callback()
      return
    }
    inner.once('end', () => callback())
    inner.end()
  }

  override _destroy (error: Error | null, callback: (error?: Error | null) => void): void {
    this.#inner?.destroy()
    callback(error)
  }
}

function createDeflateDecoder (options: DecoderOptions): Transform {
  return new DeflateDecoder(options)
}

const gunzip = (options: DecoderOptions): Transform => createGunzip(options)

type DecoderFactory = (options: DecoderOptions) => Transform

// zstd where node:zlib has it (@types/node 20 does not know it): picked by a
// filter, so that no branch depends on the Node.js version.
const OPTIONAL_DECODERS: ReadonlyArray<readonly [string, unknown]> = [
  ['zstd', (zlib as unknown as Record<string, unknown>).createZstdDecompress]
]

const DECODERS: ReadonlyMap<string, DecoderFactory> = new Map([
  ['gzip', gunzip],
  ['x-gzip', gunzip],
  ['deflate', createDeflateDecoder],
  ['br', (options: DecoderOptions) => createBrotliDecompress(options)],
  ...OPTIONAL_DECODERS.filter((entry): entry is readonly [string, DecoderFactory] => typeof entry[1] === 'function')
])

/** A content coding node:zlib decodes here (RFC 9110 §8.4.1), lowercased. */
export type Coding = 'gzip' | 'x-gzip' | 'deflate' | 'br' | 'zstd'

/** The codings decoded here: zstd where node:zlib has it. */
export const DECODED_CODINGS: readonly string[] = Object.freeze([...DECODERS.keys()])

/**
 * At most as many codings as undici's fetch decodes (5, the limit curl set
 * for CVE-2022-32206): each is a zlib stream with a window of its own, and a
 * Content-Encoding of a thousand codings would otherwise cost a thousand.
 */
export const MAX_CODINGS = 5

/**
 * The codings of a Content-Encoding value in the order they were applied
 * (RFC 9110 §8.4), lowercased (§8.4.1: case-insensitive), without `identity`
 * (no coding) or empty list elements (§5.6.1); [] when none is left. Null
 * when one is not a coding node:zlib decodes, or there are more than
 * MAX_CODINGS: the content cannot be decoded here.
 */
export function codingsOf (contentEncoding: string | undefined): Coding[] | null {
  const codings: Coding[] = []
  for (const element of (contentEncoding ?? '').split(',')) {
    const coding = element.trim().toLowerCase()
    if (coding === '' || coding === 'identity') continue
    if (!DECODERS.has(coding)) return null
    codings.push(coding as Coding)
  }
  return codings.length > MAX_CODINGS ? null : codings
}

export class SideDecoder {
  /** The decoders in decoding order: the coded bytes go into the first, the decoded ones come out of the last. */
  readonly #stages: readonly [Transform, ...Transform[]]
  readonly #hasher: MultiDigester
  readonly #limit: number
  #done: (() => void) | null = null
  #release: () => void = () => {}
  #settled = false
  /** Chunks gathered for the next write (BATCH_SIZE), and their size. */
  #batch: Uint8Array[] = []
  #batched = 0
  /** The decoded digests, once the last decoder ended within the limit; else null. */
  digests: DigestResults | null = null
  /** Stopped at the limit: the decoded reading exists but was not computed (unlike a decoding error). */
  exceeded = false

  constructor (stages: readonly [Transform, ...Transform[]], algorithms: readonly DigestAlgorithm[], limit: number) {
    this.#stages = stages
    this.#hasher = new MultiDigester(algorithms)
    this.#limit = limit
    // pipe() carries data, backpressure and the end from one decoder to the
    // next, not errors: each decoder's error is listened to here. `on`, not
    // `once`: a decoder may fail after the reading settled (a later one
    // ended first), and an error nobody listens to would throw.
    for (const stage of stages) stage.on('error', () => this.#settle(false))
    const last = stages.reduce((from, to) => from.pipe(to))
    last.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length > this.#limit) {
        this.exceeded = true
        this.#settle(false)
        return
      }
      this.#hasher.update(chunk)
    })
    last.once('end', () => this.#settle(true))
    // The response is held on the first decoder's input queue only: a later
    // one that is full pauses the pipe into it, which fills that queue.
    stages[0].on('drain', () => this.#release())
  }

  #settle (ok: boolean): void {
    if (this.#settled) return
    this.#settled = true
    if (ok) this.digests = this.#hasher.digest()
    // Every decoder: after an error or the cap the others would go on (pipe()
    // does not pass errors on), and after the end an earlier one may still
    // hold content past its coding's end.
    this.#destroyStages()
    this.#release()
    this.#done?.()
  }

  #destroyStages (): void {
    this.#batch = []
    for (const stage of this.#stages) stage.destroy()
  }

  /** False when the first decoder's input queue is full: hold the response until `onRelease`. */
  write (chunk: Uint8Array): boolean {
    if (this.#settled) return true
    this.#batch.push(chunk)
    this.#batched += chunk.byteLength
    return this.#batched < BATCH_SIZE || this.#flush()
  }

  #flush (): boolean {
    const batch = this.#batch.length === 1 ? this.#batch[0] as Uint8Array : Buffer.concat(this.#batch, this.#batched)
    this.#batch = []
    this.#batched = 0
    return this.#stages[0].write(batch)
  }

  /** Called when the first decoder can take more again, or the reading has settled. */
  onRelease (release: () => void): void {
    this.#release = release
  }

  /** Calls `done` once the decoded reading is known (available or not). */
  end (done: () => void): void {
    this.#done = done
    if (this.#settled) {
      done()
      return
    }
    if (this.#batched > 0) this.#flush()
    this.#stages[0].end()
  }

  /** Drop the decoders (the response failed or was aborted). */
  destroy (): void {
    this.#settled = true
    this.#destroyStages()
    this.#release()
  }
}

/**
 * A decoder for a Content-Encoding value, or null when it names no coding
 * (absent, empty, only `identity`: the coded reading is the decoded one) or
 * one node:zlib does not decode (codingsOf).
 */
export function sideDecoder (contentEncoding: string, algorithms: readonly DigestAlgorithm[], limit: number): SideDecoder | null {
  // Decoding undoes the codings in reverse order, the last applied first (RFC 9110 §8.4).
  // The first one queues up to HOLD_SIZE; pipe() feeds the others, each with node:stream's default queue.
  const [first, ...rest] = (codingsOf(contentEncoding) ?? []).reverse().map((coding, i) =>
    (DECODERS.get(coding) as DecoderFactory)(i === 0 ? { chunkSize: CHUNK_SIZE, writableHighWaterMark: HOLD_SIZE } : { chunkSize: CHUNK_SIZE }))
  return first === undefined ? null : new SideDecoder([first, ...rest], algorithms, limit)
}
