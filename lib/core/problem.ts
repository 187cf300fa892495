// RFC 9457 problem details for request digest failures. Pure: no fastify.
//
// Three types come from draft-ietf-httpapi-digest-fields-problem-types (-06):
// type URIs, registered titles and extension members
// (`unsupported_algorithms`, `invalid_digests`, `mismatched_digests`, each an
// array of objects naming the `header`) exactly as the draft gives them.
// Anything without a draft type (a malformed field, a missing digest, a
// content coding that cannot be decoded) is `about:blank`, whose title is the
// status phrase (RFC 9457 §4.2.1). Every body also carries `status`,
// `detail` and the plugin's error `code` (extension members are allowed,
// RFC 9457 §3.2).
//
// The server's own digest is never put in a problem: a mismatch names only
// what the client sent (the draft's oracle-attack note, §3.3).
import type { DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { ALGORITHMS, isDigestAlgorithm } from './algorithms'

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

const IANA = 'https://iana.org/assignments/http-problem-types#'

export const PROBLEM_TYPES = Object.freeze({
  unsupported: Object.freeze({ type: `${IANA}digest-unsupported-algorithms`, title: 'Unsupported Hashing Algorithms' }),
  invalid: Object.freeze({ type: `${IANA}digest-invalid-values`, title: 'Invalid Digest Values' }),
  mismatched: Object.freeze({ type: `${IANA}digest-mismatched-values`, title: 'Mismatched Digest Values' })
})

// Status phrases of RFC 9110 §15 for the about:blank problems we send.
const STATUS_TITLES: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  406: 'Not Acceptable',
  413: 'Content Too Large',
  415: 'Unsupported Media Type'
}

export interface ProblemDetails {
  type: string
  title: string
  status: number
  detail: string
  code: string
  [member: string]: unknown
}

export interface UnsupportedAlgorithm { algorithm: string, header: string }
export interface InvalidDigest { algorithm: string, header: string, reason: string }
export interface MismatchedDigest { algorithm: string, provided_digest: string, header: string }

/** An about:blank problem: the title is the status phrase. */
export function blankProblem (status: number, code: string, detail: string): ProblemDetails {
  return { type: 'about:blank', title: STATUS_TITLES[status] ?? 'Bad Request', status, detail, code }
}

export function unsupportedAlgorithmsProblem (entries: UnsupportedAlgorithm[], code: string, detail: string): ProblemDetails {
  return { ...PROBLEM_TYPES.unsupported, status: 400, detail, code, unsupported_algorithms: entries }
}

export function invalidValuesProblem (entries: InvalidDigest[], code: string, detail: string): ProblemDetails {
  return { ...PROBLEM_TYPES.invalid, status: 400, detail, code, invalid_digests: entries }
}

export function mismatchedValuesProblem (entries: MismatchedDigest[], code: string, detail: string): ProblemDetails {
  return { ...PROBLEM_TYPES.mismatched, status: 400, detail, code, mismatched_digests: entries }
}

/** A received digest as an RFC 8941 Byte Sequence (`:base64:`, §4.1.8). */
export function byteSequence (octets: Buffer): string {
  return `:${octets.toString('base64')}:`
}

/** The human-readable `reason` of an invalid digest value. */
export function invalidReason (algorithm: string): string {
  const length = isDigestAlgorithm(algorithm) ? ALGORITHMS.get(algorithm)?.length : undefined
  return length === undefined
    ? 'digest value cannot be produced by the algorithm'
    : `digest value is not ${length} bytes long`
}

/** One checked field: what the client sent and how it compared. */
export interface CheckedField {
  received: DigestMap
  verification: FieldVerification
}

/** The members of a field's failed results, by kind. */
export function collectFailures (checked: readonly CheckedField[]): { invalid: InvalidDigest[], mismatched: MismatchedDigest[] } {
  const invalid: InvalidDigest[] = []
  const mismatched: MismatchedDigest[] = []
  for (const { received, verification } of checked) {
    const header: DigestFieldName = verification.field
    for (const { algorithm, outcome } of verification.results) {
      if (outcome === 'invalid-length') {
        invalid.push({ algorithm, header, reason: invalidReason(algorithm) })
      } else if (outcome === 'mismatched') {
        mismatched.push({ algorithm, provided_digest: byteSequence(received.get(algorithm) as Buffer), header })
      }
    }
  }
  return { invalid, mismatched }
}

/** The unsupported members of fields that named no enabled algorithm. */
export function collectUnsupported (checked: readonly CheckedField[]): UnsupportedAlgorithm[] {
  const out: UnsupportedAlgorithm[] = []
  for (const { verification } of checked) {
    for (const { algorithm, outcome } of verification.results) {
      if (outcome === 'unsupported') out.push({ algorithm, header: verification.field })
    }
  }
  return out
}
