// Hashing as bytes flow: several algorithms at once, each byte fed to each
// hasher exactly once, chunks passed through untouched (no copies).
import { Readable, Transform, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm, Digester } from '../../types/index'
import { createDigester, computeDigest } from './algorithms'
import { digestsEqual } from './compare'

export type DigestResults = Map<DigestAlgorithm, Buffer>

/** Incremental digests for a set of algorithms. */
export class MultiDigester {
  readonly #digesters: Digester[]
  bytes = 0

  constructor (algorithms: Iterable<DigestAlgorithm>) {
    this.#digesters = [...algorithms].map((a) => createDigester(a))
  }

  update (chunk: Uint8Array): void {
    this.bytes += chunk.byteLength
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

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hasher.update(chunk)
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    this.digests = this.#hasher.digest()
    callback()
  }
}

const NO_DIGEST = Buffer.alloc(0)

/**
 * A pass-through stream checking bytes against digests taken before they
 * were sent (a file's, from a cache or a read on the side): it hashes what
 * flows through it and holds the last chunk back until the end, where every
 * digest in `expected` (filled in at any time before the end) must match.
 * On a mismatch it fails with `mismatch()`'s error instead of ending: the
 * receiver never gets the last bytes, so the response is cut, never
 * complete.
 */
export class CheckedStream extends Transform {
  readonly #hasher: MultiDigester
  readonly #mismatch: (algorithm: DigestAlgorithm) => Error
  #held: Buffer | null = null
  readonly expected: DigestResults = new Map()

  constructor (algorithms: Iterable<DigestAlgorithm>, mismatch: (algorithm: DigestAlgorithm) => Error) {
    super()
    this.#hasher = new MultiDigester(algorithms)
    this.#mismatch = mismatch
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#hasher.update(chunk)
    if (this.#held !== null) this.push(this.#held)
    this.#held = chunk
    callback()
  }

  override _flush (callback: TransformCallback): void {
    const actual = this.#hasher.digest()
    for (const [algorithm, value] of this.expected) {
      // An algorithm that was not hashed cannot be vouched for either.
      if (!digestsEqual(actual.get(algorithm) ?? NO_DIGEST, value)) {
        callback(this.#mismatch(algorithm))
        return
      }
    }
    callback(null, this.#held ?? undefined)
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
export async function collectUpTo (stream: DigestTransform, limit: number): Promise<Collected> {
  const it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  const chunks: Buffer[] = []
  let bytes = 0
  while (true) {
    const next = await it.next()
    if (next.done === true) return { chunks, rest: null, bytes }
    // A DigestTransform's output: Buffers (a Transform decodes written strings).
    const chunk = next.value
    chunks.push(chunk)
    bytes += chunk.byteLength
    if (bytes > limit) {
      const rest = Readable.from(replay(chunks, it), { objectMode: false })
      // Given up early (a client gone mid-download, a HEAD): destroy the
      // stream read here too, so the pipeline feeding it releases its source
      // (e.g. closes a file). Nothing else would: the generator may never
      // have started, and it does not end what it iterates.
      rest.once('close', () => stream.destroy())
      return { chunks: null, rest, bytes }
    }
  }
}

/**
 * A second consumer of the bytes flowing through a hashing stream (e.g. a
 * decoder hashing the decoded content on the side). `write` calls `next` when
 * it can take more (backpressure); `end` calls `done` once it has finished
 * with everything it was given; `destroy` drops it, calling at once any
 * `next` or `done` still waiting, so the stream feeding it never stalls.
 */
export interface StreamTap {
  write (chunk: Buffer, next: () => void): void
  end (done: () => void): void
  destroy (): void
}

/** Runs at the end of the data; an error given to `callback` replaces the clean end. */
export type EndCheck = (callback: (err?: Error | null) => void) => void
