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

type JudgePolicy = Pick<DigestParams, 'algorithms'>

/** A plugin error about the request (its statusCode is the status), as @fastify/error builds them. */
export type DigestError = Error & {
  statusCode: number
  code: string
  headers?: Record<string, string>
}

/** A refusal: the error with its problem body and headers (a custom error handler can send them itself). */
export type Failure = DigestError & { problem: ProblemDetails, headers: Record<string, string> }

/** No digests computed (nothing hashed yet, or nothing to hash). */
export const NO_DIGESTS: Texts = new Map()

function makeFailure (
  policy: JudgePolicy, error: DigestError, problem: ProblemDetails, extraHeaders?: Record<string, string>
): Failure {
  const want = wantAdvertisement(policy.algorithms)
  const headers = { 'want-content-digest': want, 'want-repr-digest': want, 'want-unencoded-digest': want }
  return Object.assign(error, { headers: { ...headers, ...extraHeaders }, problem })
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

type Entry = { algorithm: string, header: string }

// A draft type (§3.1 to §3.3): the outcome it lists, its error, type, title, and member naming each algorithm.
type Typed = [string, new (fields: string) => DigestError, string, string, string, (a: string, c: Claim) => Entry]

const INVALID: Typed = ['invalid-length', FST_DIGEST_INVALID_VALUE, 'invalid-values', 'Invalid Digest Values',
  'invalid_digests', (algorithm, { field }) => {
    const length = ALGORITHMS.get(algorithm as DigestAlgorithm)?.length
    return { algorithm, header: field, reason: `digest value is not ${length} bytes long` }
  }]
// The value sent, as an RFC 8941 Byte Sequence (§4.1.8).
const MISMATCHED: Typed = ['mismatched', FST_DIGEST_MISMATCH, 'mismatched-values', 'Mismatched Digest Values',
  'mismatched_digests', (algorithm, { field, received }) =>
    ({ algorithm, provided_digest: `:${received.get(algorithm) as string}:`, header: field })]
const UNSUPPORTED: Typed = ['unsupported', FST_DIGEST_UNSUPPORTED_ALGORITHM, 'unsupported-algorithms',
  'Unsupported Hashing Algorithms', 'unsupported_algorithms', (algorithm, { field }) => ({ algorithm, header: field })]

/** The failure of `typed` listing each of its outcome in `fields`, or null when there is none. */
function refusal (
  [outcome, Refusal, type, title, member, entry]: Typed, claims: readonly Claim[], fields: readonly FieldVerification[],
  policy: JudgePolicy
): Failure | null {
  let entries: Entry[] | undefined
  for (let i = 0; i < fields.length; i++) {
    for (const result of (fields[i] as FieldVerification).results) {
      if (result.outcome === outcome) (entries ??= []).push(entry(result.algorithm, claims[i] as Claim))
    }
  }
  if (entries === undefined) return null
  const error = new Refusal(fieldList(entries.map((e) => e.header)))
  const { statusCode: status, message: detail, code } = error
  return makeFailure(policy, error, { type: `${IANA}digest-${type}`, title, status, detail, code, [member]: entries })
}

// The failure of the claims checked as `fields`, or null: invalid values first, then mismatches; unsupported
// algorithms are refused only under `required` with no field verified, and no digest at all then is missing.
export function judge (
  claims: readonly Claim[], fields: readonly FieldVerification[], policy: JudgePolicy, required: boolean
): Failure | null {
  const failure = refusal(INVALID, claims, fields, policy) ?? refusal(MISMATCHED, claims, fields, policy)
  if (failure !== null || !required || fields.some((f) => f.ok)) return failure
  return refusal(UNSUPPORTED, claims, fields, policy) ?? blankFailure(policy, new FST_DIGEST_MISSING())
}
