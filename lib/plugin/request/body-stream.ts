// The stream a preParsing hook hands on (fastify docs/Reference/Hooks.md,
// preParsing; lib/route.js runPreParsing replaces the payload with it): it
// hashes what passes, feeds a decoder on the side, and at its end lets a
// check choose between a clean end and an error, which fastify's parser
// answers as a 4xx (lib/content-type-parser.js rawBody). It reads its source
// only once its own reader reads, so a route that reads request.raw itself
// is never stalled.
import { Transform, finished, type Readable, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm } from '../../../types/index'
import { MultiDigester, type EndCheck, type StreamTap } from '../../core/digest-stream'

function ignoreError (): void {}

export class BodyStream extends Transform {
  #source: Readable | null
  /** The stream it reads. */
  readonly origin: Readable
  /** null: a pass-through (the bytes are hashed at request.raw). */
  hasher: MultiDigester | null
  side: StreamTap | null = null
  readonly #limit: number
  /** More than `limit` bytes came: the digests are of a prefix only. */
  overLimit = false
  endCheck: EndCheck | null = null

  constructor (source: Readable & { receivedEncodedLength?: unknown }, algorithms: Iterable<DigestAlgorithm> | null, limit = Infinity) {
    super()
    this.#source = source
    this.origin = source
    this.hasher = algorithms === null ? null : new MultiDigester(algorithms)
    this.#limit = limit
    // A decoder's count, which fastify checks against Content-Length and
    // bodyLimit (lib/content-type-parser.js rawBody).
    if (typeof source.receivedEncodedLength === 'number') {
      Object.defineProperty(this, 'receivedEncodedLength', { get: () => source.receivedEncodedLength })
    }
    // A reader that stops listening must not turn a late error into an uncaught exception.
    this.on('error', ignoreError)
  }

  /** Its reader has started reading. */
  get started (): boolean {
    return this.#source === null
  }

  override _read (size: number): void {
    const source = this.#source
    if (source !== null) {
      this.#source = null
      // pipe() carries no errors: the source's error or premature end fails this stream.
      const stopWatching = finished(source, { writable: false }, (err) => { if (err) this.destroy(err) })
      this.once('close', () => {
        stopWatching()
        source.unpipe(this)
        // Given up before the end: drain the rest, as node does for a body
        // nobody reads, so that the connection can carry the next request.
        if (!source.readableEnded) source.resume()
      })
      source.pipe(this)
    }
    super._read(size)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const hasher = this.hasher
    if (hasher !== null && !this.overLimit) {
      if (hasher.bytes + chunk.length > this.#limit) this.overLimit = true
      else hasher.update(chunk)
    }
    if (this.side?.write(chunk, () => callback(null, chunk)) !== false) callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    const check = (): void => {
      // A side decoder dropped because this stream was destroyed answers too.
      if (this.destroyed) return
      if (this.endCheck === null) callback()
      else this.endCheck(callback)
    }
    if (this.side === null) check()
    else this.side.end(check)
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    this.side?.destroy()
    callback(err)
  }
}
