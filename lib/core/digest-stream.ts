// Hashing as bytes flow: several algorithms at once, each byte fed to each hasher once, chunks passed through
// untouched.
import { Readable, Transform, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm, Digester } from '../../types/index'
import { createDigester, computeDigest } from './algorithms'
import { digestsEqual } from './compare'

export type DigestResults = Map<DigestAlgorithm, Buffer>

/**
 * Incremental digests for a set of algorithms, whose hashers are made when first used (a stream never read needs none).
 */
export class MultiDigester {
  #digesters: Digester[] | null = null
  bytes = 0

  constructor (readonly algorithms: Iterable<DigestAlgorithm>) {}

  #all (): Digester[] {
    this.#digesters ??= [...this.algorithms].map((a) => createDigester(a))
    return this.#digesters
  }

  update (chunk: Uint8Array): void {
    this.bytes += chunk.byteLength
    for (const d of this.#all()) d.update(chunk)
  }

  digest (): DigestResults {
    return new Map(this.#all().map((d) => [d.algorithm, d.digest()]))
  }
}

/** A Node stream (anything with `pipe`), as fastify's reply tells one from other payloads (lib/reply.js send). */
export function isNodeStream (p: unknown): p is NodeJS.ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { pipe?: unknown }).pipe === 'function'
}

/** One-shot digests of a whole payload for a set of algorithms. */
export function digestAll (algorithms: Iterable<DigestAlgorithm>, data: Buffer | Uint8Array | string): DigestResults {
  const out: DigestResults = new Map()
  for (const a of algorithms) out.set(a, computeDigest(a, data))
  return out
}

/** Runs at the end of the data; an error given to `callback` replaces the clean end. */
export type EndCheck = (callback: (err?: Error | null) => void) => void

// A pass-through hashing what flows; `digests` is set at its end.
export class DigestTransform extends Transform {
  readonly hasher: MultiDigester
  digests: DigestResults | null = null

  constructor (algorithms: Iterable<DigestAlgorithm>) {
    super()
    this.hasher = new MultiDigester(algorithms)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hasher.update(chunk)
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    this.digests = this.hasher.digest()
    callback()
  }
}

/**
 * A DigestTransform checking bytes against digests taken before (a file's), the last chunk held back until then: a
 * mismatch with `expected` fails it with `mismatch()`'s error, or destroys it without one where that is null (its
 * reader answers otherwise).
 */
export class CheckedStream extends DigestTransform {
  readonly expected: DigestResults = new Map()
  #held: Buffer | null = null

  constructor (algorithms: Iterable<DigestAlgorithm>, readonly mismatch: (algorithm: DigestAlgorithm) => Error | null) {
    super(algorithms)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hasher.update(chunk)
    const held = this.#held
    this.#held = chunk
    callback(null, held)
  }

  override _flush (callback: TransformCallback): void {
    const digests = this.digests = this.hasher.digest()
    for (const [algorithm, value] of this.expected) {
      // An algorithm not hashed cannot be vouched for.
      if (digestsEqual(digests.get(algorithm) ?? Buffer.alloc(0), value)) continue
      const err = this.mismatch(algorithm)
      if (err === null) this.destroy()
      else callback(err)
      return
    }
    callback(null, this.#held)
  }
}

async function * replay (head: Buffer[], it: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield * head
  for (let next = await it.next(); next.done !== true; next = await it.next()) yield next.value
}

/** A stream read up to a limit: its chunks, or past the limit `rest`, replaying what was read and the rest. */
export interface Collected { chunks: Buffer[] | null, rest: NodeJS.ReadableStream | null, bytes: number }

/** Read a stream into memory up to `limit` bytes. */
export async function collectUpTo (stream: DigestTransform, limit: number): Promise<Collected> {
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
