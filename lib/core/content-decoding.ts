// Decoding a request's content codings on the side, for hashing only: the
// digests of the decoded content (a default-mode Repr-Digest, an
// Unencoded-Digest) when @fastify/compress does not decode it
// (docs/design.md, "Content coding of requests"). The route still receives
// the bytes as sent. Pure: node:zlib, no fastify.
import * as zlib from 'node:zlib'
import type { Transform } from 'node:stream'
import type { DigestAlgorithm } from '../../types/index'
import { MultiDigester, type DigestResults, type StreamTap } from './digest-stream'

type DecoderFactory = () => Transform

// zstd (RFC 8878) where node:zlib has it (Node.js 22.15 and 23.8 on);
// elsewhere it is a coding like any other not decoded here.
const OPTIONAL: ReadonlyArray<readonly [string, unknown]> = [['zstd', (zlib as unknown as Record<string, unknown>).createZstdDecompress]]

// HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2), as @fastify/compress decodes it.
const DECODERS: ReadonlyMap<string, DecoderFactory> = new Map([
  ['gzip', zlib.createGunzip],
  ['x-gzip', zlib.createGunzip],
  ['deflate', zlib.createInflate],
  ['br', zlib.createBrotliDecompress],
  ...OPTIONAL.filter((entry): entry is readonly [string, DecoderFactory] => typeof entry[1] === 'function')
])

/** The content codings decoded on the side (RFC 9110 §8.4.1). */
export const DECODABLE_CODINGS: readonly string[] = Object.freeze([...DECODERS.keys()])

/** At most this many codings are decoded, as fetch and curl do (curl's limit for CVE-2022-32206). */
export const MAX_CODINGS = 5

/**
 * The content codings of a Content-Encoding value, lowercased, in the order
 * applied (RFC 9110 §8.4), as one string (`gzip, br`); null for none
 * (absent, empty, or only `identity`).
 */
export function contentCoding (value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null
  const codings = value.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity')
  return codings.length === 0 ? null : codings.join(', ')
}

/** The decoders in decoding order: coded bytes into the first, decoded ones out of the last. */
export type DecoderStages = readonly [Transform, ...Transform[]]

/**
 * Decoders for contentCoding()'s value, the last applied first (RFC 9110
 * §8.4: "gzip, br" is undone by brotli, then gunzip); null when a coding is
 * not decoded here, or there are more than MAX_CODINGS.
 */
export function createContentDecoders (coding: string): DecoderStages | null {
  const codings = coding.split(', ')
  if (codings.length > MAX_CODINGS) return null
  const stages: Transform[] = []
  for (const name of codings.reverse()) {
    const create = DECODERS.get(name)
    if (create === undefined) return null
    stages.push(create())
  }
  return stages as unknown as DecoderStages
}

export type DecodeFailure = 'invalid' | 'too-large'

/**
 * A StreamTap that decodes and hashes the decoded bytes. It stops with
 * 'too-large' as soon as they, or the output of any decoder of a stack,
 * exceed `limit` (a decompression bomb costs at most `limit` bytes per
 * decoder, and no memory), and with 'invalid' on data that does not
 * decode. Once stopped (a failure, the end, destroy()) it drops what it is
 * given and answers pending callbacks at once, so its feeder never stalls.
 */
export class DecodingTap implements StreamTap {
  readonly #stages: DecoderStages
  readonly #hasher: MultiDigester
  #pending: (() => void) | null = null
  #done: (() => void) | null = null
  #stopped = false
  digests: DigestResults | null = null
  failure: DecodeFailure | null = null

  constructor (stages: DecoderStages, algorithms: Iterable<DigestAlgorithm>, limit: number) {
    this.#stages = stages
    this.#hasher = new MultiDigester(algorithms)
    const last = stages[stages.length - 1] as Transform
    // pipe() carries data, backpressure and the end between decoders, not errors.
    stages.forEach((stage, i) => {
      stage.on('error', () => this.#fail('invalid'))
      if (stage === last) return
      let bytes = 0
      stage.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes > limit) this.#fail('too-large')
      })
      stage.pipe(stages[i + 1] as Transform)
    })
    last.on('data', (chunk: Buffer) => {
      if (this.#hasher.bytes + chunk.length > limit) this.#fail('too-large')
      else this.#hasher.update(chunk)
    })
    stages[0].on('drain', () => this.#release())
    last.on('end', () => {
      this.digests = this.#hasher.digest()
      this.#stop()
    })
  }

  write (chunk: Buffer, next: () => void): void {
    if (this.#stopped || this.#stages[0].write(chunk)) return next()
    this.#pending = next
  }

  end (done: () => void): void {
    if (this.#stopped) return done()
    this.#done = done
    this.#stages[0].end()
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
