// Hashing a request body at its source: every byte pushed into the request's
// Readable, whoever reads it. node:http's IncomingMessage (the HTTP/1.1
// parser calls `stream.push(chunk)` and, at the end of the message,
// `stream.push(null)`: node lib/_http_common.js parserOnBody and
// parserOnMessageComplete), node:http2's Http2ServerRequest (onStreamData
// and onStreamEnd call `request.push`: lib/internal/http2/compat.js) and
// light-my-request's Request (`this.push`) all feed their readers through
// the instance's `push`, so taking that over covers a parser reading the
// stream fastify hands it, a handler reading `request.raw`, and
// @fastify/multipart piping `request.raw` into busboy alike.
//
// The end is held back until it is checked: the last pushed chunk, and at
// least `hold` bytes, stay here until the end of the data has been judged.
// A reader therefore never sees a clean end (nor, for multipart, the
// closing boundary) of a body whose check failed: on a failure the source
// is destroyed with the error instead, without closing the connection, so
// that the failure can still be answered. Pure: node:stream, no fastify.
import type { Readable } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults, type StreamTap } from './digest-stream'

type Push = (chunk: unknown, encoding?: BufferEncoding) => boolean
type Source = Readable & { push: Push, _destroy: Readable['_destroy'] }

/** Bytes held back at least (multipart's closing delimiter is at most 76 bytes, RFC 2046 §5.1.1). */
export const HOLD_BYTES = 1024

/**
 * Runs at the end of the data, once the digests (and the side tap) are
 * done; `release(err)` then ends the source cleanly, or fails it with `err`.
 */
export type TapEnd = (release: (err?: Error | null) => void) => void

function noop (): void {}

// The functions put on request.raw are made by the small functions below (or
// are module-level), never written as `source.push = (…) => …`: V8's parser
// marks a function literal assigned straight to a property as "pretenured"
// (CheckAssigningFunctionLiteralToProperty; CreateClosure's PretenuredBit),
// and such a closure is allocated in the old generation at once. There it
// lives until the next mark-compact, and, being old, is a root for every
// scavenge in between: its context (here the tap, and through it the request
// with its body chunks) survives them and is promoted. Measured
// (docs/benchmarks.md, "Findings"): scenario 5 with
// --initial-old-space-size=64, 2.7-2.9 KB promoted per request and 8-9
// mark-compacts per 400 requests with the two overrides written in the
// constructor; 0.03 KB and none, as bare Fastify and the check by hand, with
// them made here.

/** `_destroy` for the source: a client's abort gets a 4xx status (see the constructor). */
function destroyWithClientStatus (destroy: Readable['_destroy']): Readable['_destroy'] {
  return function (this: Readable, error, callback) {
    if (error !== null && typeof (error as { statusCode?: unknown }).statusCode !== 'number') {
      Object.assign(error, { statusCode: 400 })
    }
    destroy.call(this, error, callback)
  }
}

/** `_destroy` for a source whose failure has been told: leaves the connection alone (see `#end`). */
function destroyQuietly (_error: Error | null, callback: (error?: Error | null) => void): void {
  callback(null)
}

export class SourceTap {
  readonly #source: Source
  readonly #push: Push
  readonly #hasher: MultiDigester
  #side: StreamTap | null
  #held: Buffer[] = []
  #heldBytes = 0
  /** Bytes still allowed before `#overLimit` runs (drain mode). */
  #allowance = Infinity
  #overLimit: (() => void) | null = null
  #wake: (() => void) | null = null
  readonly #onEnd: TapEnd
  digests: DigestResults | null = null
  /** The source's end has been pushed (and is held back until checked). */
  ended = false
  /** Some bytes were read before the tap was installed: the digests cannot be of the whole body. */
  readonly partial: boolean

  constructor (source: Readable, algorithms: Iterable<DigestAlgorithm>, side: StreamTap | null, onEnd: TapEnd) {
    const target = source as Source
    this.#source = target
    this.#push = target.push
    this.#hasher = new MultiDigester(algorithms)
    this.#side = side
    this.#onEnd = onEnd
    // Something may have read the body before the tap (an onRequest hook of
    // the application's): those bytes were never seen here.
    this.partial = source.readableDidRead
    // Bytes the HTTP/1.1 parser pushed before the tap was installed (a body
    // that came with the headers, while an asynchronous hook ran) wait in
    // the source's buffer, unread: hash them too.
    const ended = (source as unknown as { _readableState: { ended: boolean } })._readableState.ended
    const buffered = source.readableLength > 0 ? source.read() as Buffer : null
    if (ended) {
      // Too late to hold anything back, but nothing has been read yet: the
      // check runs before any reader starts (see `end()`).
      if (buffered !== null) {
        this.#hash(buffered)
        source.unshift(buffered)
      }
      this.ended = true
      return
    }
    target.push = SourceTap.#pushThrough(this)
    // An upload cut off by the client (node's 'aborted', ECONNRESET) is the
    // client's doing: give its error a 4xx status, as fastify does for a
    // body its own parsers read (lib/content-type-parser.js rawBody), so
    // that a handler reading request.raw that rethrows it logs no 5xx.
    target._destroy = destroyWithClientStatus(target._destroy)
    if (buffered !== null) this.#take(buffered)
  }

  /** `push` for the source: every chunk through the tap (made here, not in the constructor: see above). */
  static #pushThrough (tap: SourceTap): Push {
    return (chunk, encoding) => tap.#onPush(chunk, encoding)
  }

  /** Bytes seen so far. */
  get bytes (): number {
    return this.#hasher.bytes
  }

  /** Stop feeding the side tap (it is destroyed). */
  untapSide (): void {
    this.#side?.destroy()
    this.#side = null
  }

  /**
   * Read the rest within `limit` more bytes: past it, `overLimit` runs and
   * the tap stops (the source is neither ended nor failed by it); `cutOff`
   * runs when the source closes before its end.
   */
  limitRest (limit: number, overLimit: () => void, cutOff: () => void): void {
    this.#allowance = limit
    this.#overLimit = overLimit
    // The client gone before the end: no end will come.
    this.#source.once('close', () => {
      if (this.digests === null) cutOff()
    })
  }

  /** Call `wake` once, on the next tick after the first byte arrives or the end has been checked. */
  awaitData (wake: () => void): void {
    this.#wake = wake
    // A client gone before anything arrived wakes it too.
    this.#source.once('close', () => this.#woken())
  }

  #woken (): void {
    const wake = this.#wake
    if (wake === null) return
    this.#wake = null
    process.nextTick(wake)
  }

  /** Give up: hand on everything held, hash nothing more. */
  stop (): void {
    this.untapSide()
    this.#source.push = this.#push
    if (!this.ended) this.#flush(false)
  }

  /** Run the end check when the source had already ended before the tap. */
  checkEnded (): void {
    if (this.ended && this.digests === null) this.#end(false)
  }

  #hash (chunk: Buffer): void {
    this.#hasher.update(chunk)
    this.#side?.write(chunk, noop)
  }

  #onPush (chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk === null) {
      this.ended = true
      this.#end(true)
      return false
    }
    this.#woken()
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk as Buffer
    this.#allowance -= buffer.length
    if (this.#allowance < 0) {
      const overLimit = this.#overLimit as () => void
      this.stop()
      overLimit()
      return this.#push.call(this.#source, buffer)
    }
    return this.#take(buffer)
  }

  #take (buffer: Buffer): boolean {
    this.#hash(buffer)
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

  /** Push what is held, then the end if `end`. */
  #flush (end: boolean): void {
    const held = this.#held
    this.#held = []
    this.#heldBytes = 0
    for (const chunk of held) this.#push.call(this.#source, chunk)
    if (end) this.#push.call(this.#source, null)
  }

  #end (hold: boolean): void {
    this.#source.push = this.#push
    this.digests = this.#hasher.digest()
    const release = (err?: Error | null): void => {
      if (!hold) return
      if (err == null) {
        this.#flush(true)
        return
      }
      this.#held = []
      // Fail the body without closing the connection: every byte has
      // arrived, so the answer can still be written. The error is emitted,
      // not raised through destroy(): node's IncomingMessage would take its
      // own destroy for an abort and close the socket, and light-my-request
      // would fail the whole injected response. Readers (pipeline(), async
      // iteration, @fastify/multipart) listen for it and destroy the source
      // themselves: that destroy leaves the connection alone too, and emits
      // no second error (the failure has been told).
      const source = this.#source
      source._destroy = destroyQuietly
      if (source.listenerCount('error') > 0) source.emit('error', err)
    }
    const check = (): void => {
      this.#onEnd(release)
      this.#woken()
    }
    const side = this.#side
    if (side === null) check()
    else side.end(check)
  }
}
