// A request's verdict (RFC 9530 §2, §3) and its refusal: the FST_DIGEST_* error, its RFC 9457 problem details, the
// Want-* fields (RFC 9530 §4). The types of draft-ietf-httpapi-digest-fields-problem-types-06 name the `header` and
// never echo the server's digest (§3.3); others are about:blank, titled by the status phrase (RFC 9457 §4.2.1). Pure.
import type { DigestAlgorithm, FieldVerification } from '../../types/index'
import { ALGORITHMS } from './algorithms'
import type { Claim } from './claims'
import { verifyTexts, type Texts } from './compare'
import type { DigestParams } from './option-checks'
import {
  FST_DIGEST_INVALID_VALUE, FST_DIGEST_MISMATCH, FST_DIGEST_MISSING, FST_DIGEST_UNSUPPORTED_ALGORITHM
} from './errors'
import { wantAdvertisement } from './negotiation'

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

const IANA = 'https://iana.org/assignments/http-problem-types#'

export const PROBLEM_TYPES = Object.freeze({
  unsupported: Object.freeze({ type: `${IANA}digest-unsupported-algorithms`, title: 'Unsupported Hashing Algorithms' }),
  invalid: Object.freeze({ type: `${IANA}digest-invalid-values`, title: 'Invalid Digest Values' }),
  mismatched: Object.freeze({ type: `${IANA}digest-mismatched-values`, title: 'Mismatched Digest Values' })
})

// Status phrases of RFC 9110 §15.
const STATUS_TITLES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  406: 'Not Acceptable',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error'
}

export interface ProblemDetails {
  type: string
  title: string
  status: number
  detail: string
  code: string
  [member: string]: unknown
}

/** The Want-* fields are cached per policy object. */
type JudgePolicy = Pick<DigestParams, 'algorithms'>

/** A plugin error about the request (its statusCode is the status), as @fastify/error builds them. */
export type DigestError = Error & {
  statusCode: number
  code: string
  headers?: Record<string, string>
  problem?: ProblemDetails
}

/** A refusal: the error with its problem body and headers (a custom error handler can send them itself). */
export type Failure = DigestError & { problem: ProblemDetails, headers: Record<string, string> }

/** No digests computed (nothing hashed yet, or nothing to hash). */
export const NO_DIGESTS: Texts = new Map()

const wantCache = new WeakMap<JudgePolicy, Record<string, string>>()

function makeFailure (
  policy: JudgePolicy, error: DigestError, problem: ProblemDetails, extraHeaders?: Record<string, string>
): Failure {
  let want = wantCache.get(policy)
  if (want === undefined) {
    const value = wantAdvertisement(policy.algorithms)
    want = { 'want-content-digest': value, 'want-repr-digest': value, 'want-unencoded-digest': value }
    wantCache.set(policy, want)
  }
  return Object.assign(error, { headers: { ...want, ...extraHeaders }, problem })
}

export function blankProblem (status: number, code: string, detail: string): ProblemDetails {
  return { type: 'about:blank', title: STATUS_TITLES[status] ?? 'Bad Request', status, detail, code }
}

/** A failure without a draft type. */
export function blankFailure (policy: JudgePolicy, error: DigestError, extraHeaders?: Record<string, string>): Failure {
  return makeFailure(policy, error, blankProblem(error.statusCode, error.code, error.message), extraHeaders)
}

/** Field names for an error message, each once. */
export function fieldList (names: Iterable<string>): string {
  return [...new Set(names)].join(', ')
}

/** Each claim compared with the digests (base64 text) of the bytes as received, or of the decoded content. */
export function check (
  claims: readonly Claim[], policy: JudgePolicy, received: Texts, decoded: Texts
): FieldVerification[] {
  return claims.map((claim) =>
    verifyTexts(claim.field, claim.received, claim.decoded ? decoded : received, policy.algorithms))
}

/** The `reason` of an invalid value: its length is wrong, or no algorithm of that name exists. */
export function invalidReason (algorithm: string): string {
  const length = ALGORITHMS.get(algorithm as DigestAlgorithm)?.length
  return length === undefined
    ? 'digest value cannot be produced by the algorithm'
    : `digest value is not ${length} bytes long`
}

/** Whether a value of the fields was invalid or did not match. */
function anyFailed (fields: readonly FieldVerification[]): boolean {
  for (const field of fields) {
    for (const { outcome } of field.results) if (outcome === 'invalid-length' || outcome === 'mismatched') return true
  }
  return false
}

type Member = (algorithm: string, claim: Claim) => { header: string }

// The draft's types in the order judged: the outcome each lists, its error, and its member naming each algorithm.
const TYPED: Array<[string, new (fields: string) => DigestError, { type: string, title: string }, string, Member]> = [
  ['invalid-length', FST_DIGEST_INVALID_VALUE, PROBLEM_TYPES.invalid, 'invalid_digests',
    (algorithm, { field }) => ({ algorithm, header: field, reason: invalidReason(algorithm) })],
  // The value sent, as an RFC 8941 Byte Sequence (§4.1.8).
  ['mismatched', FST_DIGEST_MISMATCH, PROBLEM_TYPES.mismatched, 'mismatched_digests',
    (algorithm, { field, received }) =>
      ({ algorithm, provided_digest: `:${received.get(algorithm) as string}:`, header: field })],
  ['unsupported', FST_DIGEST_UNSUPPORTED_ALGORITHM, PROBLEM_TYPES.unsupported, 'unsupported_algorithms',
    (algorithm, { field }) => ({ algorithm, header: field })]
]

// The failure of the claims checked as `fields`, or null: invalid values first, then mismatches;
// `required` and no field verified: the unsupported algorithms named, or a missing digest.
export function judge (
  claims: readonly Claim[], fields: readonly FieldVerification[], policy: JudgePolicy, required: boolean
): Failure | null {
  // Unsupported algorithms are refused only under `required` with nothing verified.
  if (!anyFailed(fields) && (!required || fields.some((f) => f.ok))) return null
  for (const [outcome, Refusal, type, member, entry] of TYPED) {
    const entries: Array<{ header: string }> = []
    for (let i = 0; i < fields.length; i++) {
      for (const result of (fields[i] as FieldVerification).results) {
        if (result.outcome === outcome) entries.push(entry(result.algorithm, claims[i] as Claim))
      }
    }
    if (entries.length === 0) continue
    const error = new Refusal(fieldList(entries.map((e) => e.header)))
    const problem = { ...type, status: error.statusCode, detail: error.message, code: error.code, [member]: entries }
    return makeFailure(policy, error, problem)
  }
  return blankFailure(policy, new FST_DIGEST_MISSING())
}
