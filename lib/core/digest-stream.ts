// Hashing as bytes flow: several algorithms at once, each byte fed to each hasher once, chunks passed through untouched.
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

/** A pass-through that hashes what flows; `digests` is set before its readable side ends. */
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

// A pass-through checking bytes against digests taken before (a file's): the last chunk is held
// back until every digest in `expected` matches, else it fails with `mismatch()`'s error.
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
      // An algorithm not hashed cannot be vouched for.
      if (!digestsEqual(actual.get(algorithm) ?? NO_DIGEST, value)) return callback(this.#mismatch(algorithm))
    }
    callback(null, this.#held ?? undefined)
  }
}

async function * replay (head: Buffer[], it: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield * head
  for (let next = await it.next(); next.done !== true; next = await it.next()) yield next.value
}

/** Read a stream into memory up to `limit` bytes: its chunks, or past the limit `rest`, replaying what was read and the rest. */
export async function collectUpTo (stream: DigestTransform, limit: number): Promise<{ chunks: Buffer[] | null, rest: NodeJS.ReadableStream | null, bytes: number }> {
  const it = (stream as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  const chunks: Buffer[] = []
  let bytes = 0
  for (let next = await it.next(); next.done !== true; next = await it.next()) {
    chunks.push(next.value)
    bytes += next.value.byteLength
    if (bytes > limit) {
      const rest = Readable.from(replay(chunks, it), { objectMode: false })
      // Given up early (a client gone, a HEAD): destroyed too, so that its source is released
      // (a file closed); the generator may never have started, and does not end what it iterates.
      rest.once('close', () => stream.destroy())
      return { chunks: null, rest, bytes }
    }
  }
  return { chunks, rest: null, bytes }
}

// A second consumer of a hashing stream's bytes (a side decoder): `write` is true when it takes
// more now, else calls `next` once it does; `end` calls `done` once finished; `destroy` answers a waiting `next` or `done`.
export interface StreamTap {
  write (chunk: Uint8Array, next: (() => void) | null): boolean
  end (done: () => void): void
  destroy (): void
}

/** Runs at the end of the data; an error given to `callback` replaces the clean end. */
export type EndCheck = (callback: (err?: Error | null) => void) => void
