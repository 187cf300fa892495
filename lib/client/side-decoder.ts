// The default-mode reading of a coded response's Repr-Digest: the digest of
// the representation before content coding (the plugin's default mode, see
// the README's "Default and strict mode"). The coded bytes are decoded on
// the side with node:zlib and the decoded bytes hashed; what the caller
// receives is untouched. Capped: past `limit` decoded bytes (or on a decoding
// error, or a coding node:zlib does not have) the reading is unavailable,
// and only the coded reading (RFC 9530 §3) can match.
import { createBrotliDecompress, createGunzip, createInflate, type Gunzip } from 'node:zlib'
import type { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/client'
import { MultiDigester, type DigestResults } from '../digest-stream'

const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress
}

export class SideDecoder {
  readonly #decoder: Transform
  readonly #hasher: MultiDigester
  readonly #limit: number
  #done: (() => void) | null = null
  #release: () => void = () => {}
  #settled = false
  /** The decoded digests, once the decoder ended within the limit; else null. */
  digests: DigestResults | null = null

  constructor (decoder: Transform, algorithms: readonly DigestAlgorithm[], limit: number) {
    this.#decoder = decoder
    this.#hasher = new MultiDigester(algorithms)
    this.#limit = limit
    decoder.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length > this.#limit) {
        this.#settle(false)
        return
      }
      this.#hasher.update(chunk)
    })
    decoder.on('drain', () => this.#release())
    decoder.once('end', () => this.#settle(true))
    decoder.once('error', () => this.#settle(false))
  }

  #settle (ok: boolean): void {
    if (this.#settled) return
    this.#settled = true
    if (ok) this.digests = this.#hasher.digest()
    else this.#decoder.destroy()
    this.#release()
    this.#done?.()
  }

  /** False when the decoder's input queue is full: hold the response until `onRelease`. */
  write (chunk: Uint8Array): boolean {
    return this.#settled || this.#decoder.write(chunk)
  }

  /** Called when the decoder can take more again, or has stopped. */
  onRelease (release: () => void): void {
    this.#release = release
  }

  /** Calls `done` once the decoded reading is known (available or not). */
  end (done: () => void): void {
    this.#done = done
    if (this.#settled) done()
    else this.#decoder.end()
  }

  /** Drop the decoder (the response failed or was aborted). */
  destroy (): void {
    this.#settled = true
    this.#decoder.destroy()
    this.#release()
  }
}

/**
 * A decoder for a Content-Encoding value, or null when it names no single
 * coding node:zlib decodes (several codings, or an unknown one).
 */
export function sideDecoder (contentEncoding: string, algorithms: readonly DigestAlgorithm[], limit: number): SideDecoder | null {
  const coding = contentEncoding.trim().toLowerCase()
  const make = Object.hasOwn(DECODERS, coding) ? DECODERS[coding] : undefined
  if (make === undefined) return null
  return new SideDecoder(make() as Gunzip, algorithms, limit)
}
