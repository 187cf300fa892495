// What a request claims about its content: the digest fields of its header (and trailer) section,
// those its Trailer field announces, whether it has content, which algorithms to hash. Pure.
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestAlgorithm, DigestFieldName } from '../../types/index'
import { rightLength, textsOf, type Texts } from './compare'
import { parseDigestTexts, parseLegacyDigest } from './fields'
import type { DigestParams } from './option-checks'

/**
 * One digest field of the request, header or trailer: its values as base64 text (parseDigestTexts());
 * `decoded`: checked over the decoded content.
 */
export interface Claim { field: DigestFieldName, received: Texts, decoded: boolean }

/** The digest fields by their lowercase names; Repr-Digest first, as the problem-types draft's examples list them. */
const FIELDS: ReadonlyArray<readonly [string, DigestFieldName]> = [
  ['repr-digest', 'Repr-Digest'],
  ['unencoded-digest', 'Unencoded-Digest'],
  ['content-digest', 'Content-Digest'],
  ['digest', 'Digest']
]

// Checked over the decoded content of a coded request: Unencoded-Digest
// (draft-ietf-httpbis-unencoded-digest §5), and Repr-Digest unless strict (RFC 9530 §3).
function isDecoded (field: DigestFieldName, coding: string | null, policy: DigestParams): boolean {
  return coding !== null && (field === 'Unencoded-Digest' || (field === 'Repr-Digest' && !policy.strict))
}

/** Methods whose body fastify never reads (lib/handle-request.js:34-37). */
export const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE'])

/** Whether the length fields say there is content (RFC 9110 §8.6, RFC 9112 §6.1). */
export function hasContent (headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0
}

function legacyTexts (value: string | string[]): Texts | null {
  const digests = parseLegacyDigest(value)
  return digests === null ? null : textsOf(digests)
}

/** The digest fields of a header or trailer section. Throws FST_DIGEST_INVALID_FIELD. */
export function readClaims (
  section: Record<string, string | string[] | undefined>, policy: DigestParams, coding: string | null
): Claim[] {
  const claims: Claim[] = []
  for (const [name, field] of FIELDS) {
    const value = section[name]
    // RFC 3230 Digest, read only with legacyDigest: not a Structured Field.
    if (value === undefined || (field === 'Digest' && !policy.legacyDigest)) continue
    const received = field === 'Digest' ? legacyTexts(value) : parseDigestTexts(value, field)
    if (received !== null) claims.push({ field, received, decoded: isDecoded(field, coding, policy) })
  }
  return claims
}

/** Whether a claim gives an enabled algorithm a value of another length, which no content can match (RFC 9530 §2). */
export function anyWrongLength (claims: readonly Claim[], policy: DigestParams): boolean {
  for (const claim of claims) {
    for (const algorithm of policy.algorithms) {
      const text = claim.received.get(algorithm)
      if (text !== undefined && !rightLength(algorithm, text)) return true
    }
  }
  return false
}

const NO_ALGORITHMS: ReadonlySet<DigestAlgorithm> = new Set()
const NO_NAMES: readonly string[] = []

/** The algorithms to hash over the bytes received and over the decoded content; `decodedFields`: the latter's. */
export interface Wanted {
  received: ReadonlySet<DigestAlgorithm>
  decoded: ReadonlySet<DigestAlgorithm>
  decodedFields: string
}

/**
 * Adds the enabled algorithms the claims name to `received`, the fields over decoded content to `decodedFields`;
 * returns the algorithms of the latter.
 */
function claimedAlgorithms (
  claims: readonly Claim[], policy: DigestParams, received: Set<DigestAlgorithm>, decodedFields: string[]
): Set<DigestAlgorithm> | null {
  // Made for the first algorithm of decoded content (most requests have none).
  let decoded: Set<DigestAlgorithm> | null = null
  for (const claim of claims) {
    if (claim.decoded) decodedFields.push(claim.field)
    for (const algorithm of policy.algorithms) {
      if (claim.received.has(algorithm)) (claim.decoded ? (decoded ??= new Set()) : received).add(algorithm)
    }
  }
  return decoded
}

// The algorithms to hash over the bytes as received and over the decoded content: the enabled ones the claims name
// (others are ignored, RFC 9530 §2, §3), every enabled one for a field the Trailer field announces
// (RFC 9110 §6.6.2).
export function collectAlgorithms (
  claims: readonly Claim[], trailer: string | undefined, policy: DigestParams, coding: string | null
): Wanted {
  const received = new Set<DigestAlgorithm>()
  const decodedFields: string[] = []
  let decoded = claimedAlgorithms(claims, policy, received, decodedFields)
  for (const name of trailer?.split(',') ?? NO_NAMES) {
    const field = FIELDS.find(([lower]) => lower === name.trim().toLowerCase())?.[1]
    if (field === undefined || (field === 'Digest' && !policy.legacyDigest)) continue
    const fromDecoded = isDecoded(field, coding, policy)
    const into = fromDecoded ? (decoded ??= new Set()) : received
    for (const algorithm of policy.algorithms) into.add(algorithm)
    if (fromDecoded && !decodedFields.includes(field)) decodedFields.push(field)
  }
  return { received, decoded: decoded ?? NO_ALGORITHMS, decodedFields: decodedFields.join(', ') }
}
