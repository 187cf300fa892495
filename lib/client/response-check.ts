// One response's check: which digests to compute from its head, the hashing
// as the body streams, and the verdict at its end (trailers included).
//
// * Content-Digest is over the content as received (RFC 9530 §2): the bytes
//   undici hands over, before any decoding (undici's request and stream do
//   not decode; fetch decodes after the dispatcher).
// * Repr-Digest is over the selected representation (RFC 9530 §3). Without a
//   Content-Encoding that is the same bytes. With one, RFC 9530 §3 and
//   Appendix A count the coding as part of the representation (the coded
//   bytes: the only reading in strict mode); the plugin's default mode digests
//   the representation before coding (every coding listed undone, last
//   applied first: side-decoder.ts), so by default either reading matches.
//   `reprDigest: 'decoded'` takes the decoded reading alone: the coded bytes
//   are then hashed for Content-Digest only. A coding that fails to decode
//   has no decoded reading: that Repr-Digest is mismatched.
//   When the decoded reading is unknown (past maxDecodedSize, or a coding not
//   decoded here) a Repr-Digest that does not match the coded bytes may still
//   be right: it is unchecked, not mismatched. Unchecked is not verified, so
//   it fails only under verify: 'required' (FST_DIGEST_RESPONSE_UNCHECKED),
//   and only when no other digest of the response was verified.
// * HEAD has no content: Content-Digest is checked over no bytes, and
//   Repr-Digest (that of what a GET would send, RFC 9530 §3.1) is not checked;
//   neither is a 204's (the representation's, not of the absent content:
//   RFC 9530 Appendix B.5), a 206's (the whole representation, not this part),
//   a 406's (the plugin's 406 rule sends the current representation's, not
//   that of the 406 content), nor anything on a 304 (RFC 9110 §15.4.5).
// * HEAD, 204 and 304 responses have no content: they are checked at once,
//   from their head (`empty`), so that a failure rejects the request itself
//   (a fetch() of a HEAD has no body that could fail instead).
// * A field in trailers (RFC 9530 §2, §3: both may be trailer fields) is
//   checked when it could be foreseen: the response's Trailer field names it
//   (RFC 9110 §6.6.2), or the request sent `TE: trailers` and the head carries
//   no usable digest (one that does is checked, not waited on: the trailers
//   it might add are not hashed for). Its algorithms are not known before
//   the end, so every accepted algorithm is hashed then.
// * Unencoded-Digest (draft-ietf-httpbis-unencoded-digest §3) is over the
//   representation with no content coding: over the bytes received when
//   there is none, else over the side decoder's output only, in strict mode
//   too (the one reading; the same decoder, and one hash per algorithm, as
//   Repr-Digest's decoded reading). Byte Sequences only (fields.ts). Not
//   checked on HEAD, 206 (the whole representation's, §6) or 304. When the
//   decoded reading is unknown it is unchecked; when the content does not
//   decode it is mismatched. Chromium checks every sha-256 and sha-512 value
//   it lists; here, every value of an accepted algorithm, as for the others.
import type { DigestAlgorithm, DigestClientError } from '../../types/client'
import type { AlgorithmResult, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { MultiDigester, type DigestResults } from '../core/digest-stream'
import { parseDigestField } from '../core/fields'
import { usableAlgorithms, verifyDigests } from '../core/compare'
import { invalidField, invalidValue, mismatch, missing, notAcceptable, unchecked } from './failure'
import { MAX_PROBLEM_SIZE, mayBeProblem, problemError } from './problem'
import { responseField } from './headers'
import type { ClientParams } from './options'
import { DECODED_CODINGS, MAX_CODINGS, codingsOf, sideDecoder, type SideDecoder } from './side-decoder'

export type ResponseHeaders = Record<string, string | string[] | undefined>

/** What the request said that matters to its response's check. */
export interface RequestFacts {
  readonly method: string
  /** The request sent `TE: trailers`. */
  readonly trailers: boolean
  /** The request's digest field a 406 or a problem is about, and its first algorithm. */
  readonly digestField: string | null
  readonly digestAlgorithm: string | null
}

interface Received { field: DigestFieldName, digests: DigestMap }

const NO_CONTENT = new Set([204, 304])
const NO_REPR = new Set([204, 206, 304, 406])
const NO_UNENCODED = new Set([204, 206, 304])

function parse (value: string | undefined, field: DigestFieldName, errors: DigestClientError[]): DigestMap | null {
  try {
    return parseDigestField(value, field)
  } catch (err) {
    errors.push(invalidField(field, (err as Error).message))
    return null
  }
}

/** The result a field's verification fails on, if any: an invalid value first, then a mismatch. */
function badResult (verification: FieldVerification): AlgorithmResult | undefined {
  return verification.results.find((r) => r.outcome === 'invalid-length') ??
    verification.results.find((r) => r.outcome === 'mismatched')
}

function failureOf (verification: FieldVerification): DigestClientError | null {
  const bad = badResult(verification)
  if (bad === undefined) return null
  return bad.outcome === 'invalid-length'
    ? invalidValue(verification.field, bad.algorithm)
    : mismatch(verification.field, bad.algorithm)
}

export class ResponseCheck {
  readonly #params: ClientParams
  readonly #request: RequestFacts
  readonly #status: number
  readonly #received: Received[] = []
  readonly #errors: DigestClientError[] = []
  readonly #checkRepr: boolean
  readonly #checkUnencoded: boolean
  /** A content coding is applied (one not decoded here included). */
  readonly #coded: boolean
  /** A coded Repr-Digest is read over the decoded bytes alone (`reprDigest: 'decoded'`). */
  #onDecoded = false
  readonly #trailerFields: boolean
  /** No content can follow (HEAD, 204, 304): the verdict can be given from the head. */
  readonly empty: boolean
  #hasher: MultiDigester | null = null
  #decoder: SideDecoder | null = null
  /** Why the decoded reading of a coded Repr-Digest is unknown, when no decoder runs for it. */
  #undecodable: string | null = null
  #problem: Buffer[] | null = null
  readonly #coding: string | undefined
  #problemBytes = 0

  constructor (params: ClientParams, request: RequestFacts, statusCode: number, headers: ResponseHeaders) {
    this.#params = params
    this.#request = request
    this.#status = statusCode
    this.empty = request.method === 'HEAD' || NO_CONTENT.has(statusCode)
    this.#checkRepr = request.method !== 'HEAD' && !NO_REPR.has(statusCode)
    const coding = responseField(headers, 'content-encoding')?.trim()
    this.#coding = coding
    this.#coded = codingsOf(coding)?.length !== 0
    this.#checkUnencoded = request.method !== 'HEAD' && !NO_UNENCODED.has(statusCode)
    const announced = (responseField(headers, 'trailer') ?? '').toLowerCase()
    const content = parse(responseField(headers, 'content-digest'), 'Content-Digest', this.#errors)
    const repr = this.#checkRepr ? parse(responseField(headers, 'repr-digest'), 'Repr-Digest', this.#errors) : null
    const unencoded = this.#checkUnencoded ? parse(responseField(headers, 'unencoded-digest'), 'Unencoded-Digest', this.#errors) : null
    if (content !== null) this.#received.push({ field: 'Content-Digest', digests: content })
    if (repr !== null) this.#received.push({ field: 'Repr-Digest', digests: repr })
    if (unencoded !== null) this.#received.push({ field: 'Unencoded-Digest', digests: unencoded })
    const inHead = params.algorithms.filter((a) => this.#received.some((r) => r.digests.has(a)))
    this.#trailerFields = !this.empty && (announced.includes('content-digest') || announced.includes('repr-digest') ||
      announced.includes('unencoded-digest') || (request.trailers && inHead.length === 0))
    if (statusCode !== 304) {
      // Over the bytes received: Content-Digest, Repr-Digest (its coded
      // reading, unless it is read only over decoded bytes), and
      // Unencoded-Digest when no coding is applied; over the decoded bytes:
      // Repr-Digest's decoded reading and Unencoded-Digest.
      this.#onDecoded = this.#coded && params.reprDigest === 'decoded'
      const decodes = this.#coded && !this.empty
      const decodesRepr = decodes && params.reprDigest !== 'coded'
      const all = params.algorithms
      const received = this.#trailerFields
        ? all
        : all.filter((a) => content?.has(a) === true || (!this.#onDecoded && repr?.has(a) === true) || (!decodes && unencoded?.has(a) === true))
      // (Where Unencoded-Digest is not checked, Repr-Digest is not either: NO_REPR holds NO_UNENCODED.)
      const decoded = !decodes || !this.#checkUnencoded
        ? []
        : this.#trailerFields
          ? all
          : all.filter((a) => (decodesRepr && repr?.has(a) === true) || unencoded?.has(a) === true)
      if (received.length > 0) this.#hasher = new MultiDigester(received)
      if (decoded.length > 0) {
        this.#decoder = sideDecoder(coding as string, decoded, params.maxDecodedSize)
        if (this.#decoder === null) {
          this.#undecodable = `content coding "${coding as string}" is not decoded here (${DECODED_CODINGS.join(', ')}; at most ${MAX_CODINGS})`
        }
      }
    }
    if (mayBeProblem(statusCode, responseField(headers, 'content-type'))) this.#problem = []
  }

  /** A side decoder runs: the response may have to be held for it (SharedController). */
  get decodes (): boolean {
    return this.#decoder !== null
  }

  /** See SideDecoder.onRelease. */
  onRelease (release: () => void): void {
    this.#decoder?.onRelease(release)
  }

  /** Feed a chunk of the content as received; false when the side decoder asks to hold the response. */
  update (chunk: Uint8Array): boolean {
    this.#hasher?.update(chunk)
    const more = this.#decoder?.write(chunk) ?? true
    if (this.#problem !== null) {
      this.#problemBytes += chunk.byteLength
      if (this.#problemBytes > MAX_PROBLEM_SIZE) this.#problem = null
      else this.#problem.push(Buffer.from(chunk))
    }
    return more
  }

  /** Stop everything (the response failed or was aborted). */
  destroy (): void {
    this.#decoder?.destroy()
  }

  /**
   * The verdict, given the trailers: calls `done` with the error that must
   * replace the clean end, or null. Synchronous unless a side decoder has to
   * finish first.
   */
  finish (trailers: ResponseHeaders, done: (err: DigestClientError | null) => void): void {
    if (this.#trailerFields) {
      const content = parse(responseField(trailers, 'content-digest'), 'Content-Digest', this.#errors)
      const repr = this.#checkRepr ? parse(responseField(trailers, 'repr-digest'), 'Repr-Digest', this.#errors) : null
      if (content !== null) this.#received.push({ field: 'Content-Digest', digests: content })
      if (repr !== null) this.#received.push({ field: 'Repr-Digest', digests: repr })
      const unencoded = this.#checkUnencoded ? parse(responseField(trailers, 'unencoded-digest'), 'Unencoded-Digest', this.#errors) : null
      if (unencoded !== null) this.#received.push({ field: 'Unencoded-Digest', digests: unencoded })
    }
    const coded = this.#hasher?.digest() ?? null
    if (this.#decoder === null) {
      done(this.#verdict(coded, null, this.#undecodable))
      return
    }
    const decoder = this.#decoder
    decoder.end(() => done(this.#verdict(coded, decoder.digests,
      decoder.exceeded ? `the decoded content exceeds maxDecodedSize (${this.#params.maxDecodedSize} bytes)` : null)))
  }

  /**
   * `decoded`: the digests of the decoded content, when known; `undecoded`:
   * why they are unknown although the content could have them, or null.
   */
  #verdict (coded: DigestResults | null, decoded: DigestResults | null, undecoded: string | null): DigestClientError | null {
    const enabled = this.#params.algorithms
    let verified = false
    let failure: DigestClientError | null = this.#errors[0] ?? null
    let notChecked: DigestClientError | null = null
    if (this.#status === 304) return failure // nothing to check (RFC 9110 §15.4.5)
    for (const { field, digests } of this.#received) {
      if (failure !== null) break
      const verification = this.#verify(field, digests, coded ?? NONE, decoded)
      const bad = badResult(verification)
      if (field !== 'Content-Digest' && undecoded !== null && bad?.outcome === 'mismatched') {
        // Not the coded bytes' digest (or no decoded bytes); maybe the decoded ones', unknown here.
        notChecked = unchecked(field, bad.algorithm, undecoded)
        continue
      }
      failure = failureOf(verification)
      verified ||= verification.ok
    }
    failure ??= this.#answerFailure()
    if (failure === null && !verified && this.#params.verify === 'required' && !NO_CONTENT.has(this.#status)) {
      failure = notChecked ?? missing(enabled)
    }
    return failure
  }

  /**
   * One field against the readings it may be of (see the head of this file):
   * of coded content, Unencoded-Digest (and Repr-Digest under `reprDigest:
   * 'decoded'`) only against the decoded bytes.
   */
  #verify (field: DigestFieldName, digests: DigestMap, coded: DigestResults, decoded: DigestResults | null): FieldVerification {
    const enabled = this.#params.algorithms
    if (this.#coded && (field === 'Unencoded-Digest' || (field === 'Repr-Digest' && this.#onDecoded))) {
      return decoded === null ? noReading(field, digests, enabled) : verifyDigests(field, digests, decoded, enabled)
    }
    if (field !== 'Repr-Digest' || !this.#coded) return verifyDigests(field, digests, coded, enabled)
    const verification = verifyDigests(field, digests, coded, enabled)
    if (verification.ok || this.#params.reprDigest === 'coded' || decoded === null) return verification
    const other = verifyDigests(field, digests, decoded, enabled)
    return other.ok || failureOf(verification) === null ? other : verification
  }

  /** A 406 to a request with digest fields, or a digest problem. */
  #answerFailure (): DigestClientError | null {
    const { digestField, digestAlgorithm } = this.#request
    if (this.#status === 406 && digestField !== null) return notAcceptable(digestField, digestAlgorithm)
    if (this.#problem === null) return null
    return problemError(Buffer.concat(this.#problem), this.#coding,
      digestField === null || digestField.startsWith('Want-') ? 'Content-Digest' : digestField)
  }
}

const NONE: DigestResults = new Map()

/**
 * A field read over decoded bytes that are unknown (past the limit, a coding
 * not decoded here, or one that failed to decode): no value matches. The
 * verdict makes a mismatch unchecked when the decoded bytes may exist.
 */
function noReading (field: DigestFieldName, digests: DigestMap, enabled: readonly DigestAlgorithm[]): FieldVerification {
  const { results } = verifyDigests(field, digests, NONE, enabled)
  const open = usableAlgorithms(digests, enabled).map((algorithm): AlgorithmResult => ({ algorithm, outcome: 'mismatched' }))
  return { field, ok: false, results: [...results, ...open] }
}
