// Writing the digest fields on the reply: headers, the trailers' framing (field-hook.ts declares them), or a 406
// instead; and Vary.
import type { FastifyReply } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import type { DigestResults } from '../../core/digest-stream'
import { digestFieldOf, serializeSelected } from '../../core/fields'
import { getDeclared, type Declared } from './declared'
import { PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { STALE_PROBLEM, type FieldPlan } from '../../core/response-plan'
import { NO_SIGNATURES, signatureFields, type IntegritySignature } from '../../core/integrity'
import { DIGEST_FIELDS, hasDigestTrailers } from './field-hook'

const VARY_TOKENS = ['Want-Content-Digest', 'Want-Repr-Digest', 'Want-Unencoded-Digest']
const VARY_SIGNING_TOKENS = [...VARY_TOKENS, 'Accept-Signature']
const VARY_VALUE = VARY_TOKENS.join(', ')
const VARY_SIGNING_VALUE = VARY_SIGNING_TOKENS.join(', ')

/** Vary (RFC 9110 §12.5.5): the Want-* fields, and Accept-Signature when the plugin holds SRI keys. */
export function addVary (reply: FastifyReply, signing: boolean): void {
  const current = reply.getHeader('vary')
  if (current === undefined) {
    reply.header('vary', signing ? VARY_SIGNING_VALUE : VARY_VALUE)
    return
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current)
  if (value.trim() === '*') return
  const have = new Set(value.split(',').map((t) => t.trim().toLowerCase()))
  const missing = (signing ? VARY_SIGNING_TOKENS : VARY_TOKENS).filter((t) => !have.has(t.toLowerCase()))
  if (missing.length > 0) reply.header('vary', value === '' ? missing.join(', ') : `${value}, ${missing.join(', ')}`)
}

/**
 * The fields whose value is known, and Signature-Input and Signature over Unencoded-Digest's (integrity.ts) unless the
 * reply set either.
 */
export function writeFields (
  reply: FastifyReply, content: string | null, repr: string | null, unencoded: string | null,
  signatures: readonly IntegritySignature[] = NO_SIGNATURES
): void {
  if (content !== null) reply.header('content-digest', content)
  if (repr !== null) reply.header('repr-digest', repr)
  if (unencoded === null) return
  reply.header('unencoded-digest', unencoded)
  if (signatures.length === 0 || reply.hasHeader('signature-input') || reply.hasHeader('signature')) return
  const fields = signatureFields(signatures, unencoded)
  reply.header('signature-input', fields.input)
  reply.header('signature', fields.signature)
}

/**
 * `computed`, with the digests declared for `field` (reply.setReprDigest(), setUnencodedDigest()) for `algs` in their
 * place.
 */
export function withDeclared (
  reply: FastifyReply, field: keyof Declared, computed: DigestResults | null, algs: readonly DigestAlgorithm[]
): DigestResults | null {
  const declared = getDeclared(reply)?.[field] ?? null
  if (declared === null) return computed
  const out: DigestResults = new Map(computed ?? [])
  for (const a of algs) {
    const v = declared.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out
}

// The 406 of the rule (response-plan.ts, preconditionFails()), its content returned. Its Repr-Digest is the current
// representation's, its Content-Digest the problem's (a HEAD's: empty, RFC 9530 B.2, with a GET's Content-Length,
// RFC 9110 §9.3.2). It describes no representation of the target: the fields that would go (validators, RFC 9110
// §8.8; Content-Location and Content-Language, §8.7, §8.5; Content-Disposition, RFC 6266 §4).
export const NOT_THE_406S = ['content-encoding', 'content-range', 'content-language', 'content-location',
  'content-disposition', 'etag', 'last-modified', ...DIGEST_FIELDS]
// A 406 answers the request's Repr-Digest, which no cache keys on (not in Vary, RFC 9111 §4.1): stored, it would
// answer every request for the target. Not heuristically cacheable (RFC 9110 §15.1), it is stored only with the
// replaced response's explicit freshness (RFC 9111 §3): `no-store` (§5.2.2.5) replaces its Cache-Control, and the
// freshness of Expires (§5.3) and of the fields caches read before Cache-Control goes with it: CDN-Cache-Control
// (RFC 9213 §2.2) and Surrogate-Control (W3C Edge Architecture 1.0; Varnish's builtin.vcl vcl_backend_response).
const NOT_STORED = 'no-store'
const FRESHNESS_OF_THE_REPLACED = ['expires', 'cdn-cache-control', 'surrogate-control']
export function answerStale (reply: FastifyReply, fields: FieldPlan, repr: DigestResults | null): Buffer | string {
  reply.code(406)
  for (const h of [...NOT_THE_406S, ...FRESHNESS_OF_THE_REPLACED]) reply.removeHeader(h)
  reply.header('cache-control', NOT_STORED)
  reply.header('content-type', PROBLEM_CONTENT_TYPE)
  reply.header('content-length', STALE_PROBLEM.byteLength)
  const content = fields.head ? '' : STALE_PROBLEM
  const strict = fields.strict
  const reprValue = serializeSelected(repr, [fields.preconditionAlgorithm], strict)
  writeFields(reply, digestFieldOf(fields.content, content, strict), reprValue, null)
  return content
}

// Fastify 5 joins the Trailer field's names with spaces (lib/reply.js onSendEnd); RFC 9110 §6.6.2 defines
// a comma-separated list: rewritten in node's writeHead (HTTP/1.1 and HTTP/2).
export function commaSeparatedTrailer (reply: FastifyReply): void {
  const res = reply.raw as unknown as { writeHead: (...args: unknown[]) => unknown }
  const writeHead = res.writeHead
  res.writeHead = function writeHeadWithTrailerList (...args: unknown[]) {
    const value = reply.raw.getHeader('trailer')
    if (typeof value === 'string') {
      reply.raw.setHeader('trailer', value.split(' ').filter((name) => name !== '').join(', '))
    }
    return writeHead.apply(res, args)
  }
}

/** A reply sent again (its stream failed before anything went out): its digest trailers and their framing go. */
export function dropTrailers (reply: FastifyReply): void {
  if (!hasDigestTrailers(reply)) return
  for (const name of DIGEST_FIELDS) reply.removeTrailer(name)
  for (const name of ['transfer-encoding', 'trailer']) {
    reply.removeHeader(name)
    reply.raw.removeHeader(name)
  }
}
