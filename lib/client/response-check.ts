// One response's check: what to hash, from its head; the hashing as the body streams; the
// verdict at its end, trailers included. The rules and their sources: docs/design.md, "The client".
import type { DigestAlgorithm, DigestClientError, DigestClientErrorCode } from '../../types/client'
import type { AlgorithmResult, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import {
  DECODABLE_CODINGS, DecodingTap, MAX_CODINGS, contentCoding, createContentDecoders, decodeWhole, decodingOrder
} from '../core/content-decoding'
import { MultiDigester, type DigestResults } from '../core/digest-stream'
import { clientErrors } from '../core/errors'
import { parseDigestField, parseWantField } from '../core/fields'
import { verifyDigests } from '../core/compare'
import { ALGORITHMS } from '../core/algorithms'
import type { ClientParams } from './client-options'

// node:zlib makes a thread-pool round trip per write and output chunk. The response is held
// once the first decoder queued HOLD_SIZE, until its 'drain': undici's resume() reads the
// socket's whole buffer (7.30.2 lib/dispatcher/client-h1.js:284-303, 8.13.1 :296-316),
// quadratic if held per 16 KiB.
export const HOLD_SIZE = 1024 * 1024
const BATCH_SIZE = 256 * 1024
const PROFILE = { chunkSize: 64 * 1024, queue: HOLD_SIZE, rawDeflate: true }

const MAX_PROBLEM_SIZE = 64 * 1024 // a larger body is not read as a problem
const DIGEST_TYPE = 'https://iana.org/assignments/http-problem-types#digest-'

export type ResponseHeaders = Record<string, string | string[] | undefined>

/** A field of undici's parsed headers (lowercase names; string or string[] values). */
function responseField (headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}

/** The request's header fields by lowercase name (interceptor.ts, fieldValues()). */
export type RequestFields = ReadonlyMap<string, string>

// The request's fields a 406 or a digest problem may be about, in this order.
const ASKED_FIELDS = [
  'Repr-Digest', 'Content-Digest', 'Unencoded-Digest',
  'Want-Repr-Digest', 'Want-Content-Digest', 'Want-Unencoded-Digest'
]

/** The first algorithm of the request's digest or Want-* `field`, or null when it does not parse. */
function firstAlgorithm (field: string, value: string): string | null {
  try {
    const members = field.startsWith('Want-') ? parseWantField(value) : parseDigestField(value)
    return members?.keys().next().value ?? null
  } catch {
    return null
  }
}

/** The error of `code`, carrying the `field` and `algorithm` at fault. */
function clientError (
  code: DigestClientErrorCode, field: string, algorithm: string | null, ...detail: [string?]
): DigestClientError {
  const err = new clientErrors[code](field, algorithm ?? 'none', ...detail)
  return Object.assign(err, { field, algorithm }) as DigestClientError
}

/** A refusal's body as problem details: decoded (at most MAX_PROBLEM_SIZE), a JSON object; else null. */
function problemOf (body: Buffer | null, coding: string | null): Record<string, unknown> | null {
  const codings = coding === null ? [] : decodingOrder(coding)
  if (body === null || codings === null) return null
  try {
    const problem: unknown = JSON.parse(decodeWhole(codings, body, MAX_PROBLEM_SIZE).toString())
    return problem !== null && typeof problem === 'object' ? problem as Record<string, unknown> : null
  } catch {
    return null
  }
}

/**
 * A 406 to a request with digest fields, or problem details (RFC 9457) of a digest-fields type or FST_DIGEST_* `code`.
 */
function refusalOf (
  status: number, request: RequestFields, body: Buffer | null, coding: string | null
): DigestClientError | null {
  const digestField = ASKED_FIELDS.find((field) => request.has(field.toLowerCase())) ?? null
  if (status === 406 && digestField !== null) {
    const value = request.get(digestField.toLowerCase()) as string
    return clientError('FST_DIGEST_NOT_ACCEPTABLE', digestField, firstAlgorithm(digestField, value))
  }
  const problem = problemOf(body, coding)
  if (problem === null) return null
  const { type, code, detail, title } = problem
  const typed = typeof type === 'string' && type.startsWith(DIGEST_TYPE)
  if (!typed && !(typeof code === 'string' && code.startsWith('FST_DIGEST_'))) return null
  const member = ['mismatched_digests', 'invalid_digests', 'unsupported_algorithms']
    .map((key) => Array.isArray(problem[key]) ? (problem[key] as unknown[])[0] : null)
    .find((first) => first !== null && typeof first === 'object') as Record<string, unknown> | undefined ?? {}
  const asked = digestField === null || digestField.startsWith('Want-') ? 'Content-Digest' : digestField
  const field = typeof member.header === 'string' ? member.header : asked
  const text = typeof detail === 'string' ? detail : typeof title === 'string' ? title : String(type ?? code)
  const algorithm = typeof member.algorithm === 'string' ? member.algorithm : null
  return clientError('FST_DIGEST_REQUEST_REJECTED', field, algorithm, text)
}

const FIELDS: readonly DigestFieldName[] = ['Content-Digest', 'Repr-Digest', 'Unencoded-Digest']
// A reading that is unknown or not hashed: no value of the right length matches an empty one.
const UNKNOWN: DigestResults = new Map([...ALGORITHMS.keys()].map((a) => [a, Buffer.alloc(0)]))

/** The result a field fails on: an invalid value first, then a mismatch. */
function badResult ({ results }: FieldVerification): AlgorithmResult | undefined {
  return results.find((r) => r.outcome === 'invalid-length') ?? results.find((r) => r.outcome === 'mismatched')
}

/** A digest field received, and what it is the digest of: the bytes as received ('coded'), decoded, or either. */
interface Received { field: DigestFieldName, digests: DigestMap, reading: ClientParams['reprDigest'] }

/** The fields' outcomes: the first at fault; whether every field at fault is one of the bytes received that matches
 * the decoded content instead; whether a field matched the bytes received; the fields that matched the decoded
 * content; an unchecked field. */
interface Tally {
  failure: DigestClientError | null
  stale: boolean
  overCoded: boolean
  overDecoded: DigestFieldName[]
  notChecked: DigestClientError | null
}

const HEAD_UNCHECKED = 'a HEAD response may carry the digest of the GET response\'s content, which it does not carry'

export class ResponseCheck {
  readonly #received: Received[] = []
  #invalid: DigestClientError | null = null // the first field that does not parse
  readonly #fields: readonly DigestFieldName[] // the fields checked on this response
  readonly #coding: string | null // a content coding, one not decoded here included
  readonly #trailerFields: boolean
  readonly empty: boolean // no content can follow
  #hasher: MultiDigester | null = null
  #decoder: DecodingTap | null = null
  #problem: Buffer | null = null // a body that may be a digest problem, up to MAX_PROBLEM_SIZE

  constructor (
    private readonly params: ClientParams,
    private readonly method: string,
    private readonly request: RequestFields,
    private readonly status: number,
    headers: ResponseHeaders
  ) {
    const head = method === 'HEAD'
    this.empty = head || status === 204 || status === 304
    const ofRepr = !head && ![204, 206, 304].includes(status)
    this.#fields = FIELDS.filter((f) =>
      f === 'Content-Digest' || (ofRepr && (f === 'Unencoded-Digest' || status !== 406)))
    this.#coding = contentCoding(responseField(headers, 'content-encoding'))
    this.#read(headers)
    const inHead = this.#received.some(({ digests }) => params.algorithms.some((a) => digests.has(a)))
    const announced = /content-digest|repr-digest|unencoded-digest/i.test(responseField(headers, 'trailer') ?? '')
    const asked = /(^|,)\s*trailers\s*(;|,|$)/i.test(request.get('te') ?? '') // TE: trailers
    this.#trailerFields = !this.empty && (announced || (asked && !inHead))
    const type = responseField(headers, 'content-type')
    const problem = type?.trim().toLowerCase().startsWith('application/problem+json') === true
    if (status >= 400 && problem) this.#problem = Buffer.alloc(0)
    if (status === 304) return
    // The coded and the decoded bytes, each hashed for the fields not of the other only; for all if trailers may add
    // fields.
    const coded = this.#coding !== null
    const pick = (other: Received['reading'] | null): DigestAlgorithm[] => params.algorithms.filter((a) =>
      this.#trailerFields || this.#received.some(({ digests, reading }) => digests.has(a) && reading !== other))
    const received = pick('decoded')
    // Decoded content, when hashed at all, is hashed for every algorithm received: a failing field of the bytes
    // received may match it instead (#reencoded).
    const decoded = coded && ofRepr && pick('coded').length > 0 ? pick(null) : []
    if (received.length > 0) this.#hasher = new MultiDigester(received)
    if (decoded.length === 0) return
    const stages = createContentDecoders(this.#coding as string, PROFILE)
    if (stages !== null) this.#decoder = new DecodingTap(stages, decoded, params.maxDecodedSize, BATCH_SIZE)
  }

  /** The digest fields checked, from the head or the trailers. */
  #read (fields: ResponseHeaders): void {
    for (const field of this.#fields) {
      try {
        const digests = parseDigestField(responseField(fields, field.toLowerCase()), field)
        // A coded response's Content-Digest is of the bytes received, Unencoded-Digest of the decoded ones
        // (docs/design.md, "The client").
        const reading = this.#coding === null || field === 'Content-Digest'
          ? 'coded'
          : field === 'Repr-Digest' ? this.params.reprDigest : 'decoded'
        if (digests !== null) this.#received.push({ field, digests, reading })
      } catch (err) {
        this.#invalid ??= clientError('FST_DIGEST_RESPONSE_INVALID_FIELD', field, null, (err as Error).message)
      }
    }
  }

  /** Whether a side decoder runs: the response may be held for it. */
  get decodes (): boolean { return this.#decoder !== null }

  /**
   * Feed a chunk of the content as received; false when the side decoder asks to hold the response until `release` is
   * called.
   */
  update (chunk: Uint8Array, release: (() => void) | null): boolean {
    this.#hasher?.update(chunk)
    const problem = this.#problem
    if (problem !== null) {
      this.#problem = problem.length + chunk.byteLength > MAX_PROBLEM_SIZE ? null : Buffer.concat([problem, chunk])
    }
    return this.#decoder?.write(chunk, release) ?? true
  }

  /** Stop everything (the response failed or was aborted). */
  destroy (): void { this.#decoder?.destroy() }

  /** Calls `done` with the error that must replace the clean end, or null; synchronous unless a side decoder runs. */
  finish (trailers: ResponseHeaders, done: (err: Error | null) => void): void {
    if (this.#trailerFields) this.#read(trailers)
    const coded = this.#hasher?.digest() ?? UNKNOWN
    const decoder = this.#decoder
    if (decoder === null) return done(this.#verdict(coded, null))
    decoder.end(() => done(this.#verdict(coded, decoder.digests)))
  }

  /** `decoded`: the decoded content's digests, if known. */
  #verdict (coded: DigestResults, decoded: DigestResults | null): Error | null {
    if (this.status === 304 || this.#invalid !== null) return this.#invalid
    const tally: Tally = { failure: null, stale: true, overCoded: false, overDecoded: [], notChecked: null }
    for (const received of this.#received) this.#count(tally, received, coded, decoded)
    const failure = this.#reencoded(tally)
    if (failure !== null) return failure
    const refusal = refusalOf(this.status, this.request, this.#problem, this.#coding)
    const verified = tally.overCoded || tally.overDecoded.length > 0
    if (refusal !== null || verified || this.params.verify !== 'required' || this.status === 204) return refusal
    const all = 'Content-Digest, Repr-Digest or Unencoded-Digest'
    return tally.notChecked ?? clientError('FST_DIGEST_RESPONSE_MISSING', all, this.params.algorithms.join(', '))
  }

  /**
   * One field's outcome added to `tally`: a field of the bytes received or of either reading that does not match them
   * is checked against the decoded content too.
   */
  #count (tally: Tally, received: Received, coded: DigestResults, decoded: DigestResults | null): void {
    const { field, digests, reading } = received
    const enabled = this.params.algorithms
    const verification = verifyDigests(field, digests, reading === 'decoded' ? decoded ?? UNKNOWN : coded, enabled)
    const ofDecoded = reading === 'decoded'
      ? verification.ok
      : !verification.ok && decoded !== null && verifyDigests(field, digests, decoded, enabled).ok
    const bad = badResult(verification)
    const unchecked = bad?.outcome === 'mismatched' ? this.#unchecked(reading) : null
    if (ofDecoded && reading !== 'coded') {
      tally.overDecoded.push(field)
    } else if (bad === undefined) {
      tally.overCoded ||= verification.ok
    } else if (unchecked !== null) {
      tally.notChecked = clientError('FST_DIGEST_RESPONSE_UNCHECKED', field, bad.algorithm, unchecked)
    } else {
      const invalid = bad.outcome === 'invalid-length'
      tally.failure ??= clientError(invalid ? 'FST_DIGEST_RESPONSE_INVALID_VALUE' : 'FST_DIGEST_RESPONSE_MISMATCH',
        field, bad.algorithm)
      tally.stale &&= ofDecoded
    }
  }

  /** Why a field of `reading` that mismatched may be right after all, or null: it is then unchecked, not mismatched. */
  #unchecked (reading: Received['reading']): string | null {
    // Not the empty content's (RFC 9530 B.2); maybe the GET's, whose fields a HEAD may carry (RFC 9110 §9.3.2),
    // as a cache answering it from a stored GET sends them (RFC 9111 §4). A HEAD's one field is its Content-Digest.
    if (reading === 'coded') return this.method === 'HEAD' ? HEAD_UNCHECKED : null
    // Not the coded bytes' digest; maybe the decoded ones', unknown here: the decoder that a field not of the bytes
    // received wants did not run (a coding not decoded here) or stopped past maxDecodedSize.
    if (this.#decoder === null) {
      return `content coding "${this.#coding as string}" is not decoded here ` +
        `(${DECODABLE_CODINGS.join(', ')}; at most ${MAX_CODINGS})`
    }
    return this.#decoder.failure === 'too-large'
      ? `the decoded content exceeds maxDecodedSize (${this.params.maxDecodedSize} bytes)`
      : null
  }

  // Re-encoded, not altered: every field at fault is one of the bytes received (Content-Digest, RFC 9530 §2;
  // Repr-Digest read over the coded bytes) that does not match them but matches the decoded content, none matches
  // those bytes, and a field of the decoded content (Repr-Digest's decoded reading, Unencoded-Digest) matched it,
  // none mismatched. So the server digested this content in another coding (identity), and the coding was applied
  // after it: a content coding is a property of the representation (RFC 9110 §8.4) that an intermediary may change
  // (RFC 9110 §7.7, the "transforming proxies" of RFC 9530 §6.2). A Content-Digest matching neither reading is wrong,
  // or of coded bytes this client cannot rebuild (codings are not deterministic, RFC 9530 §6.5: a proxy recoding gzip
  // as br): a mismatch. Without a content coding every field is read over the bytes received (#read): a
  // Content-Digest failing where a Repr-Digest matches the same bytes is a wrong field, also a mismatch (as after
  // undici's decompress(), which removes Content-Encoding before this interceptor sees the response).
  /** A tally's failure: none, the first, FST_DIGEST_RESPONSE_REENCODED, or null when that is accepted. */
  #reencoded ({ failure, stale, overCoded, overDecoded }: Tally): Error | null {
    if (failure === null || !stale || overCoded || overDecoded.length === 0) return failure
    const reencoded = Object.assign(clientError('FST_DIGEST_RESPONSE_REENCODED', failure.field, failure.algorithm,
      overDecoded.join(' and ')), { matched: overDecoded })
    const accept = this.params.acceptReencoded
    if (accept === false) return reencoded
    try {
      if (accept !== true) accept(reencoded)
    } catch (thrown) {
      return thrown as Error
    }
    return null
  }
}
