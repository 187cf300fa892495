// Decoding a request's content codings on the side, for hashing only
// (docs/design.md, "Request verification": a default-mode Repr-Digest, and an
// Unencoded-Digest in either mode, of a request with Content-Encoding when
// @fastify/compress does not decode it). The route still receives the bytes
// as sent. Pure: node:zlib, no fastify.
import * as zlib from 'node:zlib'
import type { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults, type StreamTap } from './digest-stream'

type DecoderFactory = () => Transform

// zstd (RFC 8878) where node:zlib has it: Node.js 22.15 and 23.8 on, not
// Node.js 20 (@types/node 20 does not know it either). Where it is missing,
// zstd is a coding like any other this module does not decode.
const OPTIONAL_DECODERS: ReadonlyArray<readonly [string, unknown]> = [
  ['zstd', (zlib as unknown as Record<string, unknown>).createZstdDecompress]
]

// HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2), as
// @fastify/compress decodes it.
const DECODERS: ReadonlyMap<string, DecoderFactory> = new Map([
  ['gzip', zlib.createGunzip],
  ['x-gzip', zlib.createGunzip],
  ['deflate', zlib.createInflate],
  ['br', zlib.createBrotliDecompress],
  ...OPTIONAL_DECODERS.filter((entry): entry is readonly [string, DecoderFactory] => typeof entry[1] === 'function')
])

/** The content codings that can be decoded on the side (RFC 9110 §8.4.1), zstd where node:zlib has it. */
export const DECODABLE_CODINGS: readonly string[] = Object.freeze([...DECODERS.keys()])

/**
 * At most this many codings are decoded, as fetch and curl do (curl's limit
 * for CVE-2022-32206): each is a decoder with a window of its own.
 */
export const MAX_CODINGS = 5

/**
 * The content codings of a Content-Encoding value, lowercased, in the order
 * they were applied (RFC 9110 §8.4), as one string (`gzip, br`); null for
 * none (absent, empty, or only `identity`).
 */
export function contentCoding (value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null
  const codings = value.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length === 0 ? null : codings.join(', ')
}

/** The decoders in decoding order: the coded bytes go into the first, the decoded ones come out of the last. */
export type DecoderStages = readonly [Transform, ...Transform[]]

/**
 * Decoders for the codings of contentCoding()'s value, the last applied
 * first (RFC 9110 §8.4: "gzip, br" is undone by a brotli decoder, then a
 * gunzip); null when one is not a coding decoded here, or there are more than
 * MAX_CODINGS.
 */
export function createContentDecoders (coding: string): DecoderStages | null {
  const codings = coding.split(', ')
  if (codings.length > MAX_CODINGS) return null
  const stages: Transform[] = []
  for (let i = codings.length - 1; i >= 0; i--) {
    const create = DECODERS.get(codings[i] as string)
    if (create === undefined) return null
    stages.push(create())
  }
  return stages as unknown as DecoderStages
}

export type DecodeFailure = 'invalid' | 'too-large'

/**
 * A StreamTap that decodes what it is given and hashes the decoded bytes,
 * stopping (failure 'too-large') as soon as they, or the output of any
 * decoder of a stack, exceed `limit`, so a decompression bomb costs at most
 * `limit` bytes per decoder and no memory. Data a decoder cannot decode gives
 * failure 'invalid'. Once stopped (a failure, the end, or destroy()) it takes
 * and drops everything and answers pending callbacks at once, so the stream
 * feeding it is never stalled.
 */
export class DecodingTap implements StreamTap {
  readonly #stages: DecoderStages
  readonly #decoder: Transform
  readonly #hasher: MultiDigester
  readonly #limit: number
  #pending: (() => void) | null = null
  #done: (() => void) | null = null
  #stopped = false
  digests: DigestResults | null = null
  failure: DecodeFailure | null = null

  constructor (stages: DecoderStages, algorithms: Iterable<DigestAlgorithm>, limit: number) {
    this.#stages = stages
    const decoder = stages[0]
    const last = stages[stages.length - 1] as Transform
    this.#decoder = decoder
    this.#hasher = new MultiDigester(algorithms)
    this.#limit = limit
    // pipe() carries data, backpressure and the end from one decoder to the
    // next, not errors: each decoder's error is listened to.
    for (let i = 0; i < stages.length; i++) {
      const stage = stages[i] as Transform
      stage.on('error', () => this.#fail('invalid'))
      if (stage === last) break
      let bytes = 0
      stage.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes > this.#limit) this.#fail('too-large')
      })
      stage.pipe(stages[i + 1] as Transform)
    }
    last.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length > this.#limit) this.#fail('too-large')
      else this.#hasher.update(chunk)
    })
    decoder.on('drain', () => this.#release())
    last.on('end', () => {
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
    for (const stage of this.#stages) stage.destroy()
    this.#release()
    const done = this.#done
    this.#done = null
    done?.()
  }
}
