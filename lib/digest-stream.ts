// Hashing as bytes flow: several algorithms at once, each byte fed to each
// hasher exactly once, chunks passed through untouched (no copies).
import { Readable, Transform, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm, Digester } from '../types/index'
import { createDigester, computeDigest } from './algorithms'

export type DigestResults = Map<DigestAlgorithm, Buffer>

/** Incremental digests for a set of algorithms. */
export class MultiDigester {
  readonly #digesters: Digester[]
  bytes = 0

  constructor (algorithms: Iterable<DigestAlgorithm>) {
    this.#digesters = [...algorithms].map((a) => createDigester(a))
  }

  update (chunk: Buffer | Uint8Array | string): void {
    this.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
    for (const d of this.#digesters) d.update(chunk)
  }

  digest (): DigestResults {
    const out: DigestResults = new Map()
    for (const d of this.#digesters) out.set(d.algorithm, d.digest())
    return out
  }
}

/** One-shot digests of a whole payload for a set of algorithms. */
export function digestAll (algorithms: Iterable<DigestAlgorithm>, data: Buffer | Uint8Array | string): DigestResults {
  const out: DigestResults = new Map()
  for (const a of algorithms) out.set(a, computeDigest(a, data))
  return out
}

/**
 * A pass-through Transform that hashes what flows through it. `digests` is
 * set just before the stream ends ('finish' of the writable side, before the
 * readable side's 'end'), so consumers reading to the end can rely on it.
 */
export class DigestTransform extends Transform {
  readonly #hasher: MultiDigester
  digests: DigestResults | null = null

  constructor (algorithms: Iterable<DigestAlgorithm>) {
    super()
    this.#hasher = new MultiDigester(algorithms)
  }

  get bytes (): number {
    return this.#hasher.bytes
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hasher.update(chunk)
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    this.digests = this.#hasher.digest()
    callback()
  }
}

export interface Collected {
  /** All chunks, when the stream ended within the limit; otherwise null. */
  chunks: Buffer[] | null
  /** A stream replaying what was read and the rest of the source, when over the limit. */
  rest: NodeJS.ReadableStream | null
  bytes: number
}

async function * replay (head: Buffer[], it: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield * head
  while (true) {
    const next = await it.next()
    if (next.done === true) return
    yield next.value
  }
}

/**
 * Read a stream into memory up to `limit` bytes. Within the limit the chunks
 * are returned; over it, reading stops and `rest` replays everything (the
 * bytes already read, then the remainder) without holding more.
 */
export async function collectUpTo (stream: NodeJS.ReadableStream, limit: number): Promise<Collected> {
  const it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  const chunks: Buffer[] = []
  let bytes = 0
  while (true) {
    const next = await it.next()
    if (next.done === true) return { chunks, rest: null, bytes }
    const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value
    chunks.push(chunk)
    bytes += chunk.byteLength
    if (bytes > limit) {
      return { chunks: null, rest: Readable.from(replay(chunks, it), { objectMode: false }), bytes }
    }
  }
}
