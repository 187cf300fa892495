// What a request says about its content, before a byte of it is read: the
// digest fields of its header section (and, at the end, of its trailer
// section), the digest fields its Trailer header field announces, whether it
// has content at all, and from that which algorithms to hash. Pure: no
// fastify.
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestAlgorithm, DigestFieldName, DigestMap } from '../../types/index'
import { parseDigestField, parseLegacyDigest } from '../fields'
import { usableAlgorithms } from '../verification'

/** What reading claims needs of the route's params (DigestParams has it). */
export interface ClaimPolicy {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
  /** Whether the RFC 3230 Digest field is read too. */
  readonly legacyDigest: boolean
}

/** A digest claim about the request content: one field, header or trailer. */
export interface Claim {
  field: DigestFieldName
  received: DigestMap
  /** Checked over the decoded content (default-mode Repr-Digest with a content coding). */
  decoded: boolean
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
  decodeRepr: boolean
): Claim[] {
  // Reported in this order (the problem-types draft's examples list
  // Repr-Digest first).
  const claims: Claim[] = []
  const repr = parseDigestField(section['repr-digest'], 'Repr-Digest')
  if (repr !== null) claims.push({ field: 'Repr-Digest', received: repr, decoded: decodeRepr })
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
 * the end. `decodeRepr`: a Repr-Digest is of the decoded content.
 */
export function collectAlgorithms (
  received: Set<DigestAlgorithm>,
  decoded: Set<DigestAlgorithm>,
  claims: readonly Claim[],
  announced: ReadonlySet<DigestFieldName>,
  policy: ClaimPolicy,
  decodeRepr: boolean
): void {
  for (const claim of claims) {
    for (const algorithm of usableAlgorithms(claim.received, policy.algorithms)) {
      (claim.decoded ? decoded : received).add(algorithm)
    }
  }
  for (const field of announced) {
    const target = field === 'Repr-Digest' && decodeRepr ? decoded : received
    for (const algorithm of policy.algorithms) target.add(algorithm)
  }
}
