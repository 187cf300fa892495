// The stream a preParsing hook hands on (fastify docs/Reference/Hooks.md): it hashes what passes,
// feeds a decoder on the side, and its end check chooses a clean end or an error, which the parser
// answers as a 4xx (lib/content-type-parser.js rawBody). It reads its source only once read itself.
import { Transform, finished, type Readable, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm } from '../../../types/index'
import { MultiDigester, type EndCheck, type StreamTap } from '../../core/digest-stream'

function ignoreError (): void {}

export class BodyStream extends Transform {
  /** The stream it reads, once its own reader has `started`. */
  readonly origin: Readable
  started = false
  /** null: a pass-through (the bytes are hashed at request.raw). */
  hasher: MultiDigester | null
  side: StreamTap | null = null
  readonly #limit: number
  /** More than `limit` bytes came: the digests are of a prefix only. */
  overLimit = false
  endCheck: EndCheck | null = null

  constructor (source: Readable & { receivedEncodedLength?: unknown }, algorithms: Iterable<DigestAlgorithm> | null, limit = Infinity) {
    super()
    this.origin = source
    this.hasher = algorithms === null ? null : new MultiDigester(algorithms)
    this.#limit = limit
    // A decoder's count, checked against Content-Length and bodyLimit (lib/content-type-parser.js rawBody).
    if (typeof source.receivedEncodedLength === 'number') {
      Object.defineProperty(this, 'receivedEncodedLength', { get: () => source.receivedEncodedLength })
    }
    // A reader that stops listening must not turn a late error into an uncaught exception.
    this.on('error', ignoreError)
  }

  override _read (size: number): void {
    if (!this.started) {
      const source = this.origin
      this.started = true
      // pipe() carries no errors: the source's error or premature end fails this stream.
      const stopWatching = finished(source, { writable: false }, (err) => { if (err) this.destroy(err) })
      this.once('close', () => {
        stopWatching()
        source.unpipe(this)
        // Given up before the end: drained, as node does for an unread body, to keep the connection.
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
