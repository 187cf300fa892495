// The stream the route's last preParsing hook hands on (fastify
// docs/Reference/Hooks.md, preParsing; lib/route.js runPreParsing): it hashes
// what the parser reads and, at its end, lets the check decide between a
// clean end and an error (fastify lib/content-type-parser.js rawBody turns an
// error of this stream into a 4xx). It reads its source only once its own
// reader reads, so a route that reads request.raw itself is never stalled.
import { Transform, finished, type Readable, type TransformCallback } from 'node:stream'
import type { DigestAlgorithm } from '../../../types/index'
import { MultiDigester, type EndCheck } from '../../core/digest-stream'

function ignoreError (): void {}

export class BodyStream extends Transform {
  #source: Readable | null
  /** The stream it reads. */
  readonly origin: Readable
  /** null: a pass-through (the bytes are hashed at request.raw instead). */
  hasher: MultiDigester | null
  readonly #limit: number
  overLimit = false
  endCheck: EndCheck | null = null

  constructor (source: Readable & { receivedEncodedLength?: unknown }, algorithms: Iterable<DigestAlgorithm> | null, limit: number) {
    super()
    this.#source = source
    this.origin = source
    this.hasher = algorithms === null ? null : new MultiDigester(algorithms)
    this.#limit = limit
    // A decoder's count, which fastify compares with Content-Length and
    // bodyLimit (lib/content-type-parser.js rawBody).
    if (typeof source.receivedEncodedLength === 'number') {
      Object.defineProperty(this, 'receivedEncodedLength', { get: () => source.receivedEncodedLength })
    }
    // A reader that stops listening must not turn a late error into an uncaught exception.
    this.on('error', ignoreError)
  }

  /** Whether its reader has started reading. */
  get started (): boolean {
    return this.#source === null
  }

  override _read (size: number): void {
    const source = this.#source
    if (source !== null) {
      this.#source = null
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
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    if (this.endCheck === null) callback()
    else this.endCheck((err) => callback(err))
  }
}
