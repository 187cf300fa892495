// Hashing a request body at its source, whoever reads it (request.raw, @fastify/multipart): node:http
// (lib/_http_common.js parserOnBody), node:http2 (lib/internal/http2/compat.js onStreamData) and light-my-request push
// every chunk and the end through the instance's `push`, which this takes over (docs/design.md, "What this plugin
// relies on"). The last chunk, at least HOLD_BYTES, is held back until the end is judged: a reader never sees a clean
// end (nor multipart's closing boundary) of a body that failed. Pure: node:stream, no fastify.
import type { Readable } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import type { DecodingTap } from './content-decoding'
import { MultiDigester, type DigestResults, type EndCheck } from './digest-stream'

type Push = (chunk: unknown, encoding?: BufferEncoding) => boolean
type Source = Readable & { push: Push, _destroy: Readable['_destroy'], _readableState: { ended: boolean } }

/** Bytes held back at least (multipart's closing delimiter is at most 76 bytes, RFC 2046 §5.1.1). */
const HOLD_BYTES = 1024

/** `_destroy` for a source whose failure has been told: leaves the connection alone. */
const destroyQuietly: Readable['_destroy'] = (_error, callback) => callback(null)

export class SourceTap {
  readonly #source: Source
  readonly #push: Push
  readonly hasher: MultiDigester
  #side: DecodingTap | null
  #held: Buffer[] = []
  #heldBytes = 0
  readonly #onEnd: EndCheck
  /**
   * Past `allowance` more bytes the tap stops, ended with `failure` 'too-large'; `cutOff` runs if the source closes
   * before its end.
   */
  allowance = Infinity
  failure: 'too-large' | null = null
  cutOff: (() => void) | null = null
  /** Called once, on the next tick after the first byte, the checked end, or the source's close. */
  wake: (() => void) | null = null
  digests: DigestResults | null = null
  #ended = false

  /** `pushed`: every chunk pushed before the tap (a ChunkKeeper's), hashed here; else what the source buffers. */
  constructor (
    source: Readable, algorithms: Iterable<DigestAlgorithm>, side: DecodingTap | null, onEnd: EndCheck,
    pushed: readonly Buffer[] | null = null
  ) {
    const target = this.#source = source as Source
    this.#push = target.push
    this.hasher = new MultiDigester(algorithms)
    this.#side = side
    this.#onEnd = onEnd
    if (pushed !== null) for (const chunk of pushed) this.#hash(chunk)
    // Bytes pushed before the tap (a body that came with the headers) are hashed too, and held back.
    const buffered = source.readableLength > 0 ? source.read() as Buffer : null
    const fresh = pushed === null
    if (target._readableState.ended) {
      // Too late to hold anything back, but nothing was read: checkEnded() runs before any reader.
      if (buffered !== null) {
        if (fresh) this.#hash(buffered)
        source.unshift(buffered)
      }
      this.#ended = true
      return
    }
    target.push = (chunk, encoding) => this.#onPush(chunk, encoding)
    const destroy = target._destroy
    // A client's abort gets 400, as fastify's parsers give it (lib/content-type-parser.js rawBody).
    target._destroy = function (this: Readable, error, callback) {
      if (error !== null && typeof (error as { statusCode?: unknown }).statusCode !== 'number') {
        Object.assign(error, { statusCode: 400 })
      }
      destroy.call(this, error, callback)
    }
    source.once('close', () => {
      if (this.digests === null) this.cutOff?.()
      this.#woken()
    })
    if (buffered !== null) this.#take(buffered, fresh)
  }

  #woken (): void {
    if (this.wake !== null) process.nextTick(this.wake)
    this.wake = null
  }

  /** Give up: hand on everything held, hash nothing more. */
  stop (): void {
    this.#side?.destroy()
    this.#side = null
    this.#source.push = this.#push
    if (!this.#ended) this.#flush(false)
  }

  /** The end check of a source that had ended before the tap. */
  checkEnded (): void {
    if (this.#ended) this.#end(false)
  }

  #hash (chunk: Buffer): void {
    this.hasher.update(chunk)
    this.#side?.write(chunk, null)
  }

  #onPush (chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) {
      this.#ended = true
      this.#end(true)
      return false
    }
    this.#woken()
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk as Buffer
    this.allowance -= buffer.length
    if (this.allowance < 0) {
      this.stop()
      this.failure = 'too-large'
      this.#end(false)
      return this.#push.call(this.#source, buffer)
    }
    return this.#take(buffer)
  }

  #take (buffer: Buffer, hash = true): boolean {
    if (hash) this.#hash(buffer)
    this.#held.push(buffer)
    this.#heldBytes += buffer.length
    let more = true
    while (this.#held.length > 1 && this.#heldBytes - (this.#held[0] as Buffer).length >= HOLD_BYTES) {
      const first = this.#held.shift() as Buffer
      this.#heldBytes -= first.length
      more = this.#push.call(this.#source, first)
    }
    return more
  }

  #flush (end: boolean): void {
    const held = this.#held
    this.#held = []
    this.#heldBytes = 0
    for (const chunk of held) this.#push.call(this.#source, chunk)
    if (end) this.#push.call(this.#source, null)
  }

  #end (hold: boolean): void {
    this.#source.push = this.#push
    this.digests = this.hasher.digest()
    const release = (err?: Error | null): void => {
      if (!hold) return
      if (err == null) return this.#flush(true)
      this.#held = []
      // Emitted, not destroy() (node's IncomingMessage takes that for an abort, closing the socket); readers destroy it
      // quietly.
      this.#source._destroy = destroyQuietly
      if (this.#source.listenerCount('error') > 0) this.#source.emit('error', err)
    }
    const check = (): void => {
      this.#onEnd(release)
      this.#woken()
    }
    if (this.#side === null) check()
    else this.#side.end(check)
  }
}
