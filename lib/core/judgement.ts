// Judging a request's claims against the digests of its content: each
// field checked (RFC 9530 §2, §3), the verdict, and a refusal as a Failure:
// the FST_DIGEST_* error, its RFC 9457 problem details (problem.ts beside
// this file) and the Want-* fields that tell the client what to send next
// time (RFC 9530 §4). Pure: no fastify.
import type { DigestAlgorithm, DigestVerification, FieldVerification } from '../../types/index'
import type { DigestResults } from './digest-stream'
import { verifyDigests } from './compare'
import { wantAdvertisement } from './negotiation'
import type { Claim } from './claims'
import {
  blankProblem,
  collectFailures,
  collectUnsupported,
  invalidValuesProblem,
  mismatchedValuesProblem,
  unsupportedAlgorithmsProblem,
  type CheckedField,
  type ProblemDetails
} from './problem'
import {
  FST_DIGEST_INVALID_VALUE,
  FST_DIGEST_MISMATCH,
  FST_DIGEST_MISSING,
  FST_DIGEST_UNSUPPORTED_ALGORITHM
} from './errors'

/** What judging needs of the route's params (DigestParams has it; the Want-* fields are cached per params object). */
export interface JudgePolicy {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
}

/** A plugin error about the request (its statusCode is the status), as @fastify/error builds them. */
export type DigestError = Error & { statusCode: number, code: string, headers?: Record<string, string>, problem?: ProblemDetails }

/** A refusal: the error (its statusCode is the status), its problem body, extra headers. */
export interface Failure {
  error: DigestError
  problem: ProblemDetails
  headers: Record<string, string>
}

/** No digests computed (nothing hashed yet, or nothing to hash). */
export const NO_DIGESTS: DigestResults = new Map()

const wantCache = new WeakMap<JudgePolicy, Record<string, string>>()

/** Want-Content-Digest / Want-Repr-Digest / Want-Unencoded-Digest advertising the route's algorithms. */
function wantHeaders (policy: JudgePolicy): Record<string, string> {
  let headers = wantCache.get(policy)
  if (headers === undefined) {
    const value = wantAdvertisement(policy.algorithms)
    headers = { 'want-content-digest': value, 'want-repr-digest': value, 'want-unencoded-digest': value }
    wantCache.set(policy, headers)
  }
  return headers
}

function makeFailure (
  policy: JudgePolicy,
  error: DigestError,
  build: (code: string, detail: string) => ProblemDetails,
  extraHeaders?: Record<string, string>
): Failure {
  const headers = { ...wantHeaders(policy), ...extraHeaders }
  const problem = build(error.code, error.message)
  // A custom error handler can send these itself.
  error.headers = headers
  error.problem = problem
  return { error, problem, headers }
}

/** A failure without a draft type: about:blank, titled by its status (RFC 9457 §4.2.1). */
export function blankFailure (policy: JudgePolicy, error: DigestError, extraHeaders?: Record<string, string>): Failure {
  return makeFailure(policy, error, (code, detail) => blankProblem(error.statusCode, code, detail), extraHeaders)
}

/** Field names for an error message, each once. */
export function fieldList (names: Iterable<string>): string {
  return [...new Set(names)].join(', ')
}

/** Each claim compared with the digests of the bytes as received, or of the decoded content. */
export function check (claims: readonly Claim[], policy: JudgePolicy, received: DigestResults, decoded: DigestResults): CheckedField[] {
  return claims.map((claim) => ({
    received: claim.received,
    verification: verifyDigests(claim.field, claim.received, claim.decoded ? decoded : received, policy.algorithms)
  }))
}

/** The failure of a set of checked fields, or null. `required`: a verified field is needed. */
export function judge (checked: CheckedField[], policy: JudgePolicy, required: boolean): Failure | null {
  const { invalid, mismatched } = collectFailures(checked)
  if (invalid.length > 0) {
    const error = new FST_DIGEST_INVALID_VALUE(fieldList(invalid.map((e) => e.header)))
    return makeFailure(policy, error, (code, detail) => invalidValuesProblem(invalid, code, detail))
  }
  if (mismatched.length > 0) {
    const error = new FST_DIGEST_MISMATCH(fieldList(mismatched.map((e) => e.header)))
    return makeFailure(policy, error, (code, detail) => mismatchedValuesProblem(mismatched, code, detail))
  }
  if (!required || checked.some((c) => c.verification.ok)) return null
  const unsupported = collectUnsupported(checked)
  if (unsupported.length > 0) {
    const error = new FST_DIGEST_UNSUPPORTED_ALGORITHM(fieldList(unsupported.map((e) => e.header)))
    return makeFailure(policy, error, (code, detail) => unsupportedAlgorithmsProblem(unsupported, code, detail))
  }
  return blankFailure(policy, new FST_DIGEST_MISSING())
}

/** request.digestVerification of checked fields that did not fail. */
export function summarize (fields: FieldVerification[], emptyReason: 'no-digest' | 'no-body'): DigestVerification {
  const verified = fields.some((f) => f.ok)
  return verified ? { verified, fields } : { verified, reason: emptyReason, fields }
}
