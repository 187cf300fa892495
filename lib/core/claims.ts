// What a request claims about its content: the digest fields of its header
// (and trailer) section, those its Trailer field announces, whether it has
// content, and so which algorithms to hash. Pure: no fastify.
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestAlgorithm, DigestFieldName, DigestMap } from '../../types/index'
import { parseDigestField, parseLegacyDigest } from './fields'
import { usableAlgorithms } from './compare'

/** What reading claims needs of the route's params (DigestParams has it). */
export interface ClaimPolicy {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
  /** The RFC 3230 Digest field is read too. */
  readonly legacyDigest: boolean
  /** Repr-Digest is of the content as received, coding included (RFC 9530 §3). */
  readonly strict: boolean
}

/** One digest field of the request, header or trailer. */
export interface Claim {
  field: DigestFieldName
  received: DigestMap
  /** Checked over the decoded content. */
  decoded: boolean
}

/**
 * Whether `field` is checked over the decoded content of a request with
 * content codings `coding`: Unencoded-Digest (draft-ietf-httpbis-unencoded-digest
 * §5), and Repr-Digest in the default mode.
 */
function isDecoded (field: DigestFieldName, coding: string | null, policy: ClaimPolicy): boolean {
  if (coding === null) return false
  return field === 'Unencoded-Digest' || (field === 'Repr-Digest' && !policy.strict)
}

/**
 * Methods whose body fastify never reads: it runs the handler straight away
 * (fastify lib/handle-request.js:34-37, its `bodyless` methods).
 */
export const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE'])

/** Whether the length fields say there is content (RFC 9110 §8.6, RFC 9112 §6.1). */
export function hasContent (headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0
}

/** No Content-Type, and no content by the length fields: fastify parses nothing (fastify lib/handle-request.js:55-65). */
export function parsesNothing (headers: IncomingHttpHeaders): boolean {
  return headers['content-type'] === undefined && !hasContent(headers)
}

/** The digest fields of a header or trailer section. Throws FST_DIGEST_INVALID_FIELD. */
export function readClaims (
  section: Record<string, string | string[] | undefined>,
  policy: ClaimPolicy,
  coding: string | null
): Claim[] {
  // Repr-Digest first, as the problem-types draft's examples list it.
  const claims: Claim[] = []
  const repr = parseDigestField(section['repr-digest'], 'Repr-Digest')
  if (repr !== null) claims.push({ field: 'Repr-Digest', received: repr, decoded: isDecoded('Repr-Digest', coding, policy) })
  const unencoded = parseDigestField(section['unencoded-digest'], 'Unencoded-Digest')
  if (unencoded !== null) claims.push({ field: 'Unencoded-Digest', received: unencoded, decoded: isDecoded('Unencoded-Digest', coding, policy) })
  const content = parseDigestField(section['content-digest'], 'Content-Digest')
  if (content !== null) claims.push({ field: 'Content-Digest', received: content, decoded: false })
  if (policy.legacyDigest) {
    // RFC 3230 Digest: a digest of the body as sent (RFC 3230 §4.3.2).
    const legacy = parseLegacyDigest(section.digest)
    if (legacy !== null) claims.push({ field: 'Digest', received: legacy, decoded: false })
  }
  return claims
}

const TRAILER_FIELDS: ReadonlyMap<string, DigestFieldName> = new Map([
  ['content-digest', 'Content-Digest'],
  ['repr-digest', 'Repr-Digest'],
  ['unencoded-digest', 'Unencoded-Digest'],
  ['digest', 'Digest']
])

/** Digest fields the request announces in its Trailer header field (RFC 9110 §6.6.2). */
export function announcedTrailers (value: string | undefined, policy: ClaimPolicy): Set<DigestFieldName> {
  const out = new Set<DigestFieldName>()
  if (value === undefined) return out
  for (const name of value.split(',')) {
    const field = TRAILER_FIELDS.get(name.trim().toLowerCase())
    if (field !== undefined && (field !== 'Digest' || policy.legacyDigest)) out.add(field)
  }
  return out
}

/**
 * Adds to `received` the algorithms to hash over the bytes as received, and
 * to `decoded` those to hash over the decoded content: the enabled ones the
 * claims name (recipients ignore the others, RFC 9530 §2, §3), and every
 * enabled one for an announced trailer, whose algorithms are only known at
 * the end. Returns the fields checked over the decoded content, for the
 * errors that say why it could not be (e.g. `Repr-Digest, Unencoded-Digest`).
 */
export function collectAlgorithms (
  received: Set<DigestAlgorithm>,
  decoded: Set<DigestAlgorithm>,
  claims: readonly Claim[],
  announced: ReadonlySet<DigestFieldName>,
  policy: ClaimPolicy,
  coding: string | null
): string {
  const decodedFields = new Set<string>()
  for (const claim of claims) {
    if (claim.decoded) decodedFields.add(claim.field)
    for (const algorithm of usableAlgorithms(claim.received, policy.algorithms)) {
      (claim.decoded ? decoded : received).add(algorithm)
    }
  }
  for (const field of announced) {
    const fromDecoded = isDecoded(field, coding, policy)
    if (fromDecoded) decodedFields.add(field)
    for (const algorithm of policy.algorithms) (fromDecoded ? decoded : received).add(algorithm)
  }
  return [...decodedFields].join(', ')
}
