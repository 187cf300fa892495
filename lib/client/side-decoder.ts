// The decoded reading of a coded response: the coded bytes decoded on the
// side with node:zlib and the result hashed, what the caller receives left
// untouched. Content-Encoding lists codings as applied (RFC 9110 §8.4): a
// `gzip, br` body goes through a brotli decoder piped into a gunzip. zstd
// (RFC 8878) where node:zlib has it (Node.js 22.15, 23.8 on). Past `limit`
// decoded bytes the decoded reading is unknown (`exceeded`); on a decoding
// error there is none: the content is not what its Content-Encoding says.
import * as zlib from 'node:zlib'
import { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/client'
import { MultiDigester, type DigestResults } from '../core/digest-stream'

/** node:zlib's output chunks: 64 KiB, one thread-pool round trip per 64 KiB socket read (16 KiB makes four). */
export const CHUNK_SIZE = 64 * 1024
/**
 * The first decoder's input queue; the response is held when it is full and
 * released on its 'drain'. undici 7.30.2 on resume reads the socket's whole
 * buffer (lib/dispatcher/client-h1.js resume()), grown meanwhile: held per
 * 16 KiB a download would take time quadratic in its size.
 */
export const HOLD_SIZE = 1024 * 1024
/** Coded bytes go to the first decoder in writes of at least this size: node:zlib makes a thread-pool round trip per write. */
export const BATCH_SIZE = 256 * 1024
/** At most as many codings as undici's fetch decodes (5, curl's limit for CVE-2022-32206). */
export const MAX_CODINGS = 5

interface DecoderOptions { chunkSize: number, writableHighWaterMark?: number }

/**
 * Whether deflate data starts with a zlib header (RFC 1950 §2.2: method 8 in
 * CMF's low bits). "deflate" is zlib data (RFC 9110 §8.4.1.2), but servers
 * send raw deflate too, and fetch reads both (undici lib/web/fetch/util.js).
 */
export const hasZlibHeader = (data: Uint8Array): boolean => ((data[0] as number) & 0x0f) === 0x08

function deflateDecoder ({ chunkSize, writableHighWaterMark }: DecoderOptions): Transform {
  let inner: Transform | null = null
  return new Transform({
    writableHighWaterMark,
    transform (chunk: Buffer, _encoding, callback) {
      // The first chunk is not empty: batches are, and node:zlib pushes, only non-empty ones.
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

type Factory = (options: DecoderOptions) => Transform
const zstd = (zlib as unknown as { createZstdDecompress?: Factory }).createZstdDecompress
const DECODERS: ReadonlyMap<string, Factory> = new Map<string, Factory>([
  ['gzip', zlib.createGunzip], ['x-gzip', zlib.createGunzip], ['deflate', deflateDecoder], ['br', zlib.createBrotliDecompress],
  ...(zstd === undefined ? [] : [['zstd', zstd] as const])
])

/** The codings decoded here: zstd where node:zlib has it. */
export const DECODED_CODINGS: readonly string[] = [...DECODERS.keys()]

/**
 * The codings of a Content-Encoding in the order applied, lowercased (RFC 9110
 * §8.4.1), without `identity` or empty elements (§5.6.1). Null when one is not
 * decoded here, or past MAX_CODINGS.
 */
export function codingsOf (contentEncoding: string | undefined): string[] | null {
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length > MAX_CODINGS || codings.some((c) => !DECODERS.has(c)) ? null : codings
}

export class SideDecoder {
  /** Decoding order: coded bytes go into the first, decoded ones come out of the last. */
  readonly #stages: readonly Transform[]
  readonly #hasher: MultiDigester
  #done: (() => void) | null = null
  #release: () => void = () => {}
  #settled = false
  #batch: Uint8Array[] = []
  #batched = 0
  /** The decoded digests, once the last decoder ended within the limit; else null. */
  digests: DigestResults | null = null
  /** Stopped at the limit: the decoded reading exists but is unknown. */
  exceeded = false

  constructor (stages: readonly [Transform, ...Transform[]], algorithms: readonly DigestAlgorithm[], limit: number) {
    this.#stages = stages
    this.#hasher = new MultiDigester(algorithms)
    // pipe() carries data, backpressure and ends, not errors. `on`: a decoder may fail after settling.
    for (const stage of stages) stage.on('error', () => this.#settle(false))
    const last = stages.reduce((from, to) => from.pipe(to))
    last.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length <= limit) return this.#hasher.update(chunk)
      this.exceeded = true
      this.#settle(false)
    })
    last.once('end', () => this.#settle(true))
    // Held on the first decoder's queue only: a later full one pauses the pipe into it.
    stages[0].on('drain', () => this.#release())
  }

  #settle (ok: boolean): void {
    if (this.#settled) return
    if (ok) this.digests = this.#hasher.digest()
    this.destroy()
    this.#done?.()
  }

  /** False when the first decoder's queue is full: hold the response until `onRelease`. */
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
    return (this.#stages[0] as Transform).write(batch)
  }

  /** Called when the first decoder takes more again, or the reading has settled. */
  onRelease (release: () => void): void {
    this.#release = release
  }

  /** Calls `done` once the decoded reading is known (available or not). */
  end (done: () => void): void {
    this.#done = done
    if (this.#settled) return done()
    if (this.#batched > 0) this.#flush()
    ;(this.#stages[0] as Transform).end()
  }

  /** Drop every decoder (pipe() passes no error on; an earlier one may hold bytes past its coding's end). */
  destroy (): void {
    this.#settled = true
    this.#batch = []
    for (const stage of this.#stages) stage.destroy()
    this.#release()
  }
}

/** A decoder for a Content-Encoding, or null when it names no coding, or one not decoded here. */
export function sideDecoder (contentEncoding: string, algorithms: readonly DigestAlgorithm[], limit: number): SideDecoder | null {
  // The last coding applied is undone first (RFC 9110 §8.4); the first decoder queues up to HOLD_SIZE.
  const stages = (codingsOf(contentEncoding) ?? []).reverse().map((coding, i) =>
    (DECODERS.get(coding) as Factory)(i === 0 ? { chunkSize: CHUNK_SIZE, writableHighWaterMark: HOLD_SIZE } : { chunkSize: CHUNK_SIZE }))
  return stages.length === 0 ? null : new SideDecoder(stages as [Transform, ...Transform[]], algorithms, limit)
}
