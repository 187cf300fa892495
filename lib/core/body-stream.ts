// The stream a preParsing hook hands on (fastify docs/Reference/Hooks.md) to hash a parsed body: each chunk of
// `origin`, read once this stream is read (`started`), is hashed, given to `side` (a decoder; held while it is full)
// and pushed, `origin` paused while our reader is full. At the end `endCheck` chooses the clean end or an error, the
// parser's to
// answer with a 4xx (fastify lib/content-type-parser.js rawBody). Pure: node:stream, no fastify.
import { finished, Readable } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import type { DecodingTap } from './content-decoding'
import { MultiDigester, type DigestResults, type EndCheck } from './digest-stream'

/** A preParsing payload: a decoder's (@fastify/compress) counts the bytes it read, for fastify's limits. */
export type PayloadStream = Readable & { receivedEncodedLength?: unknown }

function ignoreError (): void {}

export class BodyStream extends Readable {
  hasher: MultiDigester | null
  side: DecodingTap | null = null
  endCheck: EndCheck | null = null
  digests: DigestResults | null = null
  /** Past `limit` bytes hashing stops, with `failure` 'too-large': the digests are of a prefix only. */
  limit = Infinity
  failure: 'too-large' | null = null
  started = false

  constructor (readonly origin: PayloadStream, algorithms: Iterable<DigestAlgorithm> | null) {
    super()
    this.hasher = algorithms === null ? null : new MultiDigester(algorithms)
    // A decoder's count, checked against Content-Length and bodyLimit (lib/content-type-parser.js rawBody).
    if (typeof origin.receivedEncodedLength === 'number') {
      Object.defineProperty(this, 'receivedEncodedLength', { get: () => origin.receivedEncodedLength })
    }
    // A reader that stops listening must not turn a late error into an uncaught exception.
    this.on('error', ignoreError)
  }

  override _read (): void {
    if (this.started) {
      if (this.origin.isPaused()) this.origin.resume()
      return
    }
    this.started = true
    const source = this.origin
    const onData = (chunk: Buffer): void => this.#takeChunk(chunk)
    const onEnd = (): void => { if (this.side === null) this.settle(); else this.side.end(() => this.settle()) }
    // The source's error or premature end fails this stream.
    const stopWatching = finished(source, { writable: false }, (err) => { if (err) this.destroy(err) })
    this.once('close', () => {
      stopWatching()
      source.removeListener('data', onData).removeListener('end', onEnd)
      // Given up before the end: drained, as node does for an unread body, to keep the connection.
      if (!source.readableEnded) source.resume()
    })
    source.on('data', onData).once('end', onEnd).resume()
  }

  /**
   * At the end of the source and side: `digests` set, then the end check (not once destroyed: a dropped side answers
   * too).
   */
  settle (): void {
    if (this.destroyed) return
    this.digests ??= this.hasher?.digest() ?? null
    if (this.endCheck === null) this.push(null)
    else this.endCheck((err) => { if (err != null) this.destroy(err); else this.push(null) })
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    this.side?.destroy()
    callback(err)
  }

  /** A chunk of the source: hashed, given to the side (a full decoder holds it back until it takes more), pushed. */
  #takeChunk (chunk: Buffer): void {
    const hasher = this.hasher
    if (hasher !== null && this.failure === null) {
      if (hasher.bytes + chunk.length > this.limit) this.failure = 'too-large'
      else hasher.update(chunk)
    }
    const side = this.side
    const held = side !== null &&
      !side.write(chunk, () => { if (!this.destroyed && this.push(chunk)) this.origin.resume() })
    if (held || !this.push(chunk)) this.origin.pause()
  }
}
