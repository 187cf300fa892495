// A small request body kept as it is pushed into request.raw, to be hashed once at its end (one-shot hashing costs less
// than a streaming hasher, and no stream is made per request): node:http (lib/_http_common.js parserOnBody), node:http2
// (lib/internal/http2/compat.js onStreamData) and light-my-request push every chunk and the end through the instance's
// `push`, which this takes over, as source-tap.ts does (docs/design.md, "What this plugin relies on"). It keeps
// references only and holds nothing back: a body it judges has been pushed whole before the check. Pure: no fastify.
import type { Readable } from 'node:stream'

type Push = (chunk: unknown, encoding?: BufferEncoding) => boolean
type Source = Readable & { push: Push }

export class ChunkKeeper {
  readonly #source: Source
  readonly #push: Push
  /** The chunks pushed; null once past `bound` (more than the declared length: fails closed). */
  chunks: Buffer[] | null = []
  bytes = 0
  /** The end was pushed. */
  ended = false

  constructor (source: Readable, readonly bound: number) {
    const target = this.#source = source as Source
    this.#push = target.push
    target.push = (chunk, encoding) => this.#onPush(chunk, encoding)
  }

  #onPush (chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) {
      this.ended = true
      this.#source.push = this.#push
    } else {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk as Buffer
      this.bytes += buffer.length
      if (this.bytes > this.bound) this.chunks = null
      else this.chunks?.push(buffer)
      return this.#push.call(this.#source, buffer)
    }
    return this.#push.call(this.#source, null)
  }

  /** Stops keeping (`push` restored); returns the chunks kept. */
  release (): Buffer[] | null {
    this.#source.push = this.#push
    return this.chunks
  }

  /** The bytes pushed but the last `unread`; not past the bound (`chunks` not null). */
  whole (unread: number): Buffer {
    const chunks = this.chunks as Buffer[]
    const whole = chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks, this.bytes)
    return unread === 0 ? whole : whole.subarray(0, whole.length - unread)
  }
}
