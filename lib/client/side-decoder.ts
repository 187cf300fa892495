// The decoded reading of a coded response: its bytes decoded on the side with
// node:zlib and hashed, what the caller receives untouched. Codings are listed
// as applied (RFC 9110 §8.4): `gzip, br` goes through brotli, then gunzip. zstd
// (RFC 8878) where node:zlib has it. Past `limit` decoded bytes the reading is
// unknown (`exceeded`); a decoding error leaves none.
import * as zlib from 'node:zlib'
import { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/client'
import { MultiDigester, type DigestResults } from '../core/digest-stream'

// node:zlib makes a thread-pool round trip per write and per output chunk: 64 KiB
// chunks out, writes of BATCH_SIZE in. The response is held once the first decoder
// queued HOLD_SIZE, until its 'drain': undici 7.30.2's resume() reads the socket's
// whole buffer (lib/dispatcher/client-h1.js:284-303), quadratic if held per 16 KiB.
export const CHUNK_SIZE = 64 * 1024
export const HOLD_SIZE = 1024 * 1024
export const BATCH_SIZE = 256 * 1024
/** At most as many codings as undici's fetch decodes (5, curl's limit for CVE-2022-32206). */
export const MAX_CODINGS = 5

interface DecoderOptions { chunkSize: number, writableHighWaterMark?: number }

// "deflate" is zlib data (RFC 9110 §8.4.1.2), yet fetch reads raw deflate too (undici
// lib/web/fetch/util.js): a zlib header has method 8 in its first octet (RFC 1950 §2.2).
export const hasZlibHeader = (data: Uint8Array): boolean => ((data[0] as number) & 0x0f) === 0x08

function deflateDecoder ({ chunkSize, writableHighWaterMark }: DecoderOptions): Transform {
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

type Factory = (options: DecoderOptions) => Transform
const zstd = (zlib as unknown as { createZstdDecompress?: Factory }).createZstdDecompress
const DECODERS: ReadonlyMap<string, Factory> = new Map<string, Factory>([
  ['gzip', zlib.createGunzip], ['x-gzip', zlib.createGunzip], ['deflate', deflateDecoder], ['br', zlib.createBrotliDecompress],
  ...([['zstd', zstd]] as const).filter((entry): entry is ['zstd', Factory] => entry[1] !== undefined) // no branch on the Node.js version
])

export const DECODED_CODINGS: readonly string[] = [...DECODERS.keys()]

/** The codings as applied, lowercased (RFC 9110 §8.4.1), without `identity` or empty elements (§5.6.1); null if one is not decoded here. */
export function codingsOf (contentEncoding: string | undefined): string[] | null {
  const codings = (contentEncoding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length > MAX_CODINGS || codings.some((c) => !DECODERS.has(c)) ? null : codings
}

export class SideDecoder {
  readonly #stages: readonly [Transform, ...Transform[]]
  readonly #hasher: MultiDigester
  #done: (() => void) | null = null
  #release: () => void = () => {}
  #settled = false
  #batch: Uint8Array[] = []
  #batched = 0
  digests: DigestResults | null = null // once the last decoder ended within the limit
  exceeded = false // stopped at the limit: the decoded reading exists but is unknown

  constructor (stages: readonly [Transform, ...Transform[]], algorithms: readonly DigestAlgorithm[], limit: number) {
    this.#stages = stages
    this.#hasher = new MultiDigester(algorithms)
    // pipe() passes no errors on; `on`, as a decoder may fail after settling.
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
    return this.#stages[0].write(batch)
  }

  /** Called when the first decoder takes more again, or the reading has settled. */
  onRelease (release: () => void): void { this.#release = release }

  /** Calls `done` once the decoded reading is known (available or not). */
  end (done: () => void): void {
    this.#done = done
    if (this.#settled) return done()
    if (this.#batched > 0) this.#flush()
    this.#stages[0].end()
  }

  /** Drop every decoder: pipe() passes no error on, and an earlier one may hold bytes past its coding's end. */
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
