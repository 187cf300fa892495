// The stream a preParsing hook hands on (fastify docs/Reference/Hooks.md): it hashes what passes,
// feeds a decoder on the side, and its end check chooses a clean end or an error, which the parser
// answers as a 4xx (lib/content-type-parser.js rawBody). It reads its source only once read itself.
import { finished, type Readable } from 'node:stream'
import type { DigestAlgorithm } from '../../../types/index'
import { DigestTransform } from '../../core/digest-stream'

function ignoreError (): void {}

export class BodyStream extends DigestTransform {
  /** The stream it reads, once its own reader has `started`. */
  readonly origin: Readable
  started = false

  constructor (source: Readable & { receivedEncodedLength?: unknown }, algorithms: Iterable<DigestAlgorithm> | null) {
    super(algorithms)
    this.origin = source
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
}
