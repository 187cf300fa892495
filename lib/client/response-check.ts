// One response's check: what to hash, decided from its head; the hashing as the
// body streams; the verdict at its end, trailers included.
// * Content-Digest is over the content as received (RFC 9530 §2). Repr-Digest is
//   over the representation (§3): with a content coding, the coded bytes (§3,
//   Appendix A; strict mode) or the decoded ones (the plugin's default mode):
//   either by default, one with `reprDigest`. Unencoded-Digest: the decoded bytes
//   only (draft-ietf-httpbis-unencoded-digest §3).
// * Content that fails to decode has no decoded reading; where it is unknown
//   (maxDecodedSize, a coding not decoded here), a digest not of the coded bytes is
//   unchecked: it fails only under verify: 'required', with no other digest verified.
// * Not checked: Repr- and Unencoded-Digest on HEAD (§3.1), 204 (Appendix B.5) and
//   206 (the whole representation's); Repr-Digest on 406 (the plugin's is the current
//   representation's); anything on 304 (RFC 9110 §15.4.5). HEAD, 204 and 304 are
//   decided from the head, so a failure rejects the request itself.
// * Trailer fields (§2, §3) are checked when the Trailer field names them (RFC 9110
//   §6.6.2), or `TE: trailers` was sent and the head has no usable digest.
import type { DigestAlgorithm, DigestClientError } from '../../types/client'
import type { AlgorithmResult, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { MultiDigester, type DigestResults } from '../core/digest-stream'
import { parseDigestField } from '../core/fields'
import { usableAlgorithms, verifyDigests } from '../core/compare'
import { clientError } from './failures'
import type { ClientParams } from './options'
import { MAX_PROBLEM_SIZE, mayBeProblem, refusalOf } from './refusal'
import { DECODED_CODINGS, MAX_CODINGS, codingsOf, sideDecoder, type SideDecoder } from './side-decoder'

export type ResponseHeaders = Record<string, string | string[] | undefined>

/** A field of undici's parsed headers (lowercase names; string or string[] values). */
function responseField (headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/** The request's method, whether it sent `TE: trailers`, and the digest field (and its first algorithm) a refusal is about. */
export interface RequestFacts { readonly method: string, readonly trailers: boolean, readonly digestField: string | null, readonly digestAlgorithm: string | null }

const FIELDS: readonly DigestFieldName[] = ['Content-Digest', 'Repr-Digest', 'Unencoded-Digest']
const NONE: DigestResults = new Map()

/** The result a field fails on: an invalid value first, then a mismatch. */
function badResult ({ results }: FieldVerification): AlgorithmResult | undefined {
  return results.find((r) => r.outcome === 'invalid-length') ?? results.find((r) => r.outcome === 'mismatched')
}

function failureOf (verification: FieldVerification): DigestClientError | null {
  const bad = badResult(verification)
  if (bad === undefined) return null
  return clientError(bad.outcome === 'invalid-length' ? 'FST_DIGEST_RESPONSE_INVALID_VALUE' : 'FST_DIGEST_RESPONSE_MISMATCH', verification.field, bad.algorithm)
}

/** A field read over decoded bytes that are unknown or absent: no value matches. */
function noReading (field: DigestFieldName, digests: DigestMap, enabled: readonly DigestAlgorithm[]): FieldVerification {
  const { results } = verifyDigests(field, digests, NONE, enabled)
  const open = usableAlgorithms(digests, enabled).map((algorithm): AlgorithmResult => ({ algorithm, outcome: 'mismatched' }))
  return { field, ok: false, results: [...results, ...open] }
}

export class ResponseCheck {
  readonly #params: ClientParams
  readonly #request: RequestFacts
  readonly #status: number
  readonly #received: Array<{ field: DigestFieldName, digests: DigestMap }> = []
  readonly #errors: DigestClientError[] = []
  readonly #fields: readonly DigestFieldName[] // the fields checked on this response
  readonly #coding: string | undefined
  readonly #coded: boolean // a content coding, one not decoded here included
  readonly #trailerFields: boolean
  readonly empty: boolean // no content can follow
  #hasher: MultiDigester | null = null
  #decoder: SideDecoder | null = null
  #undecodable: string | null = null // why no decoder runs for a coding
  #problem: Buffer | null = null // a body that may be a digest problem, up to MAX_PROBLEM_SIZE

  constructor (params: ClientParams, request: RequestFacts, status: number, headers: ResponseHeaders) {
    this.#params = params
    this.#request = request
    this.#status = status
    const head = request.method === 'HEAD'
    this.empty = head || status === 204 || status === 304
    const ofRepr = !head && ![204, 206, 304].includes(status)
    this.#fields = FIELDS.filter((f) => f === 'Content-Digest' || (ofRepr && (f === 'Unencoded-Digest' || status !== 406)))
    this.#coding = responseField(headers, 'content-encoding')?.trim()
    this.#coded = codingsOf(this.#coding)?.length !== 0
    const got = this.#read(headers)
    const [content, repr, unencoded] = FIELDS.map((f) => got.get(f))
    const inHead = this.#received.some(({ digests }) => params.algorithms.some((a) => digests.has(a)))
    this.#trailerFields = !this.empty && (/content-digest|repr-digest|unencoded-digest/.test((responseField(headers, 'trailer') ?? '').toLowerCase()) ||
      (request.trailers && !inHead))
    if (mayBeProblem(status, responseField(headers, 'content-type'))) this.#problem = Buffer.alloc(0)
    if (status === 304) return
    // Hashed as received: Content-Digest, Repr-Digest's coded reading, Unencoded-Digest without a
    // coding; decoded: Repr-Digest's decoded reading, Unencoded-Digest. Trailers: every algorithm.
    const onDecoded = this.#coded && params.reprDigest === 'decoded'
    const decodes = this.#coded && !this.empty
    const pick = (wanted: (a: DigestAlgorithm) => boolean): readonly DigestAlgorithm[] =>
      this.#trailerFields ? params.algorithms : params.algorithms.filter(wanted)
    const coded = pick((a) => content?.has(a) === true || (!onDecoded && repr?.has(a) === true) || (!decodes && unencoded?.has(a) === true))
    // (Where Unencoded-Digest is not checked, Repr-Digest is not either.)
    const decoded = decodes && ofRepr
      ? pick((a) => (params.reprDigest !== 'coded' && repr?.has(a) === true) || unencoded?.has(a) === true)
      : []
    if (coded.length > 0) this.#hasher = new MultiDigester(coded)
    if (decoded.length === 0) return
    this.#decoder = sideDecoder(this.#coding as string, decoded, params.maxDecodedSize)
    if (this.#decoder === null) {
      this.#undecodable = `content coding "${this.#coding as string}" is not decoded here (${DECODED_CODINGS.join(', ')}; at most ${MAX_CODINGS})`
    }
  }

  /** The digest fields checked, from the head or the trailers. */
  #read (fields: ResponseHeaders): Map<DigestFieldName, DigestMap> {
    const got = new Map<DigestFieldName, DigestMap>()
    for (const field of this.#fields) {
      try {
        const digests = parseDigestField(responseField(fields, field.toLowerCase()), field)
        if (digests === null) continue
        got.set(field, digests)
        this.#received.push({ field, digests })
      } catch (err) {
        this.#errors.push(clientError('FST_DIGEST_RESPONSE_INVALID_FIELD', field, null, (err as Error).message))
      }
    }
    return got
  }

  /** The side decoder, when one runs: the response may be held for it (SharedController). */
  get decoder (): SideDecoder | null { return this.#decoder }

  /** Feed a chunk of the content as received; false when the side decoder asks to hold the response. */
  update (chunk: Uint8Array): boolean {
    this.#hasher?.update(chunk)
    const problem = this.#problem
    if (problem !== null) this.#problem = problem.length + chunk.byteLength > MAX_PROBLEM_SIZE ? null : Buffer.concat([problem, chunk])
    return this.#decoder?.write(chunk) ?? true
  }

  /** Stop everything (the response failed or was aborted). */
  destroy (): void { this.#decoder?.destroy() }

  /** Calls `done` with the error that must replace the clean end, or null; synchronous unless a side decoder runs. */
  finish (trailers: ResponseHeaders, done: (err: DigestClientError | null) => void): void {
    if (this.#trailerFields) this.#read(trailers)
    const coded = this.#hasher?.digest() ?? NONE
    const decoder = this.#decoder
    if (decoder === null) return done(this.#verdict(coded, null, this.#undecodable))
    decoder.end(() => done(this.#verdict(coded, decoder.digests,
      decoder.exceeded ? `the decoded content exceeds maxDecodedSize (${this.#params.maxDecodedSize} bytes)` : null)))
  }

  /** `decoded`: the decoded content's digests, when known; `undecoded`: why they are unknown although they exist, or null. */
  #verdict (coded: DigestResults, decoded: DigestResults | null, undecoded: string | null): DigestClientError | null {
    let failure = this.#errors[0] ?? null
    if (this.#status === 304) return failure
    let verified = false
    let notChecked: DigestClientError | null = null
    for (const { field, digests } of this.#received) {
      if (failure !== null) break
      const verification = this.#verify(field, digests, coded, decoded)
      const bad = badResult(verification)
      if (field !== 'Content-Digest' && undecoded !== null && bad?.outcome === 'mismatched') {
        // Not the coded bytes' digest; maybe the decoded ones', unknown here.
        notChecked = clientError('FST_DIGEST_RESPONSE_UNCHECKED', field, bad.algorithm, undecoded)
        continue
      }
      failure = failureOf(verification)
      verified ||= verification.ok
    }
    failure ??= refusalOf(this.#status, this.#request, this.#problem, this.#coding)
    if (failure === null && !verified && this.#params.verify === 'required' && this.#status !== 204) {
      failure = notChecked ?? clientError('FST_DIGEST_RESPONSE_MISSING', 'Content-Digest, Repr-Digest or Unencoded-Digest', this.#params.algorithms.join(', '))
    }
    return failure
  }

  /** One field against the readings it may be of (see the head of this file). */
  #verify (field: DigestFieldName, digests: DigestMap, coded: DigestResults, decoded: DigestResults | null): FieldVerification {
    const enabled = this.#params.algorithms
    if (this.#coded && (field === 'Unencoded-Digest' || (field === 'Repr-Digest' && this.#params.reprDigest === 'decoded'))) {
      return decoded === null ? noReading(field, digests, enabled) : verifyDigests(field, digests, decoded, enabled)
    }
    const verification = verifyDigests(field, digests, coded, enabled)
    if (field !== 'Repr-Digest' || !this.#coded || verification.ok || this.#params.reprDigest === 'coded' || decoded === null) return verification
    const other = verifyDigests(field, digests, decoded, enabled)
    return other.ok || failureOf(verification) === null ? other : verification
  }
}
