// Decoding a request's content coding on the side, for hashing only
// (docs/design.md, "Request verification": default-mode Repr-Digest of a request with Content-Encoding
// when @fastify/compress does not decode it). The route still receives the
// bytes as sent. Pure: node:zlib, no fastify.
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib'
import type { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults, type StreamTap } from '../digest-stream'

/** The content codings that can be decoded on the side (RFC 9110 §8.4.1). */
export const DECODABLE_CODINGS: readonly string[] = Object.freeze(['gzip', 'x-gzip', 'deflate', 'br'])

/**
 * The single content coding of a Content-Encoding value, lowercased; null for
 * none (absent, empty, or only `identity`). Several codings are returned as
 * listed (e.g. `gzip, br`), which createContentDecoder does not decode.
 */
export function contentCoding (value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null
  const codings = value.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length === 0 ? null : codings.join(', ')
}

/** A decoder for one content coding, or null when it is not one we decode. */
export function createContentDecoder (coding: string): Transform | null {
  switch (coding) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip()
    case 'deflate':
      // HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2), as
      // @fastify/compress decodes it.
      return createInflate()
    case 'br':
      return createBrotliDecompress()
    default:
      return null
  }
}

export type DecodeFailure = 'invalid' | 'too-large'

/**
 * A StreamTap that decodes what it is given and hashes the decoded bytes,
 * stopping (failure 'too-large') as soon as they exceed `limit`, so a
 * decompression bomb costs at most `limit` bytes of hashing and no memory.
 * Data the decoder cannot decode gives failure 'invalid'. Once stopped (a
 * failure, the end, or destroy()) it takes and drops everything and answers
 * pending callbacks at once, so the stream feeding it is never stalled.
 */
export class DecodingTap implements StreamTap {
  readonly #decoder: Transform
  readonly #hasher: MultiDigester
  readonly #limit: number
  #pending: (() => void) | null = null
  #done: (() => void) | null = null
  #stopped = false
  digests: DigestResults | null = null
  failure: DecodeFailure | null = null

  constructor (decoder: Transform, algorithms: Iterable<DigestAlgorithm>, limit: number) {
    this.#decoder = decoder
    this.#hasher = new MultiDigester(algorithms)
    this.#limit = limit
    decoder.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length > this.#limit) this.#fail('too-large')
      else this.#hasher.update(chunk)
    })
    decoder.on('error', () => this.#fail('invalid'))
    decoder.on('drain', () => this.#release())
    decoder.on('end', () => {
      this.digests = this.#hasher.digest()
      this.#stop()
    })
  }

  write (chunk: Buffer, next: () => void): void {
    if (this.#stopped || this.#decoder.write(chunk)) {
      next()
      return
    }
    this.#pending = next
  }

  end (done: () => void): void {
    if (this.#stopped) {
      done()
      return
    }
    this.#done = done
    this.#decoder.end()
  }

  /** Stop without a result (neither digests nor failure). */
  destroy (): void {
    this.#stop()
  }

  #release (): void {
    const pending = this.#pending
    this.#pending = null
    pending?.()
  }

  #fail (failure: DecodeFailure): void {
    /* c8 ignore next -- a destroyed decoder emits no further data or errors; kept as a guard */
    if (this.#stopped) return
    this.failure = failure
    this.#stop()
  }

  #stop (): void {
    this.#stopped = true
    this.#decoder.destroy()
    this.#release()
    const done = this.#done
    this.#done = null
    done?.()
  }
}
