// Writing the digest fields on the reply: headers, trailers (RFC 9530 §2,
// §3; draft-ietf-httpbis-unencoded-digest §3: every field may be a trailer),
// or a 406 instead; and Vary.
import type { FastifyReply } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import type { DigestResults } from '../../core/digest-stream'
import { digestFieldOf, serializeSelected } from '../../core/fields'
import { getDeclared, getDeclaredUnencoded } from './declared'
import { PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { sameList } from '../../core/response-plan'
import { STALE_PROBLEM, preconditionFails } from '../../core/precondition'
import { signatureFields, type IntegritySignature } from '../../core/integrity'
import { DIGEST_FIELDS, type DigestField, type TrailerHook } from './field-hook'
import type { ResponseState, Payload } from './reply-state'

const VARY_TOKENS = ['Want-Content-Digest', 'Want-Repr-Digest', 'Want-Unencoded-Digest']
const VARY_SIGNING_TOKENS = [...VARY_TOKENS, 'Accept-Signature']
const VARY_VALUE = VARY_TOKENS.join(', ')
const VARY_SIGNING_VALUE = VARY_SIGNING_TOKENS.join(', ')

/**
 * Vary: the Want-* fields, and Accept-Signature when the plugin holds SRI
 * keys (`signing`): each can change the fields a response carries (RFC 9110 §12.5.5).
 */
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

/** Signature-Input and Signature over the Unencoded-Digest value (lib/core/integrity.ts), unless the reply set either. */
function writeSignatures (reply: FastifyReply, signatures: readonly IntegritySignature[], unencoded: string): void {
  if (signatures.length === 0 || reply.hasHeader('signature-input') || reply.hasHeader('signature')) return
  const fields = signatureFields(signatures, unencoded)
  reply.header('signature-input', fields.input)
  reply.header('signature', fields.signature)
}

/** Every field as one `value`: the bytes sent are the uncoded representation. */
export function writeShared (
  reply: FastifyReply, value: string, content: boolean, repr: boolean, unencoded: boolean, signatures: readonly IntegritySignature[]
): void {
  if (content) reply.header('content-digest', value)
  if (repr) reply.header('repr-digest', value)
  if (unencoded) {
    reply.header('unencoded-digest', value)
    writeSignatures(reply, signatures, value)
  }
}

/** Set field `name` to the digests of `algs` found in `digests`, if any; returns the value set. */
export function setField (
  reply: FastifyReply, name: string, digests: DigestResults | null, algs: readonly DigestAlgorithm[], strict: boolean
): string | null {
  const value = serializeSelected(digests, algs, strict)
  if (value !== null) reply.header(name, value)
  return value
}

/** `computed`, with the values of `declared` for `algs` in their place. */
function withDeclared (
  declared: ReadonlyMap<DigestAlgorithm, Buffer> | null, computed: DigestResults | null, algs: readonly DigestAlgorithm[]
): DigestResults | null {
  if (declared === null) return computed
  const out: DigestResults = new Map(computed ?? [])
  for (const a of algs) {
    const v = declared.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out
}

/** Representation digests for `algs`: declared ones (reply.setReprDigest) first, then computed ones. */
export function reprDigests (reply: FastifyReply, computed: DigestResults | null, algs: readonly DigestAlgorithm[]): DigestResults | null {
  return withDeclared(getDeclared(reply), computed, algs)
}

/**
 * Unencoded-Digest's digests: those declared with setUnencodedDigest();
 * then, when the route coded nothing itself, setReprDigest()'s and
 * `identity`. The plugin never decodes a route's own coded bytes.
 */
export function unencodedDigests (reply: FastifyReply, state: ResponseState, identity: DigestResults | null): DigestResults | null {
  const algs = state.plan.unencoded
  const computed = state.identityUncoded ? reprDigests(reply, identity, algs) : null
  return withDeclared(getDeclaredUnencoded(reply), computed, algs)
}

/**
 * Digests of the whole representation, from where the plan says
 * (`reprFrom`). 'sent': the identity one or the whole file as sent, unless a
 * coding was applied after the representation stage (@fastify/compress on
 * an explicit HEAD route): that representation was never seen, so unknown.
 */
export function wholeOf (
  reply: FastifyReply, state: ResponseState, content: DigestResults | null, identity: DigestResults | null
): DigestResults | null {
  const { reprFrom } = state.plan
  if (reprFrom === 'content') return content
  if (reprFrom === 'identity') return identity
  if (reply.getHeader('content-encoding') !== state.reprEncoding) return null
  return state.file === null ? identity : state.fileCoded
}

/**
 * The 406 rule, once the whole representation's digests `repr` are known:
 * the 406's content, or null when the response goes on. Its Repr-Digest is
 * the current representation's, its Content-Digest the problem's (a HEAD's:
 * the empty content's, RFC 9530 B.2, with the Content-Length a GET's would
 * have, RFC 9110 §9.3.2). Decided once: the precondition is then dropped.
 */
export function decidePrecondition (reply: FastifyReply, state: ResponseState, repr: DigestResults | null): Buffer | string | null {
  const fails = preconditionFails(state.precondition, reply.statusCode, repr)
  state.precondition = null
  if (!fails) return null
  const { plan } = state
  reply.code(406)
  for (const h of ['content-encoding', 'content-range', ...DIGEST_FIELDS]) reply.removeHeader(h)
  reply.header('content-type', PROBLEM_CONTENT_TYPE)
  reply.header('content-length', STALE_PROBLEM.byteLength)
  setField(reply, 'repr-digest', repr, [plan.preconditionAlgorithm], plan.mode.strict)
  const content = plan.head ? '' : STALE_PROBLEM
  const contentDigest = digestFieldOf(plan.content, content, plan.mode.strict)
  if (contentDigest !== null) reply.header('content-digest', contentDigest)
  return content
}

/**
 * Set the digest fields as headers, or answer 406. `content`: the digests
 * of the bytes sent; `identity`: of the representation before content coding.
 */
export function emitFields (
  reply: FastifyReply, payload: Payload, state: ResponseState, content: DigestResults | null, identity: DigestResults | null
): Payload {
  const { plan } = state
  const strict = plan.mode.strict
  const repr = reprDigests(reply, wholeOf(reply, state, content, identity), plan.reprNeeded)
  const refused = decidePrecondition(reply, state, repr)
  if (refused !== null) return refused
  const contentValue = serializeSelected(content, plan.content, strict)
  if (contentValue !== null) reply.header('content-digest', contentValue)
  // Usually both fields carry the same digests of the same bytes: one value.
  const reprValue = repr === content && sameList(plan.repr, plan.content) ? contentValue : serializeSelected(repr, plan.repr, strict)
  if (reprValue !== null) reply.header('repr-digest', reprValue)
  if (plan.unencoded.length > 0) {
    // Always Byte Sequences (draft-ietf-httpbis-unencoded-digest §3).
    const unencoded = setField(reply, 'unencoded-digest', unencodedDigests(reply, state, identity), plan.unencoded, true)
    if (unencoded !== null) writeSignatures(reply, plan.signatures, unencoded)
  }
  return payload
}

/**
 * Declare a digest trailer, its value read once the body is sent; an unknown
 * one fails its callback, which fastify drops (lib/reply.js sendTrailer).
 * With an onDigestFields hook, the value waits for it (field-hook.ts).
 */
export function declareTrailer (
  reply: FastifyReply, name: DigestField, algs: readonly DigestAlgorithm[], strict: boolean,
  compute: (reply: FastifyReply) => DigestResults | null, hook: TrailerHook | null
): void {
  if (algs.length === 0) return
  hook?.declare()
  reply.trailer(name, (r, _payload, done) => {
    const value = serializeSelected(compute(r), algs, strict)
    if (hook !== null) hook.settle(name, value, done)
    else if (value === null) done(new Error(`no ${name} value`))
    else done(null, value)
  })
}

/**
 * Fastify 5 writes the Trailer field with the names joined by spaces
 * (lib/reply.js onSendEnd: `header += ' '`), RFC 9110 §6.6.2 defines a
 * comma-separated list: rewritten when node writes the head (writeHead, for
 * HTTP/1.1 and HTTP/2). docs/design.md, "What this plugin relies on".
 */
interface RawResponse {
  writeHead: (this: RawResponse, ...args: unknown[]) => unknown
  getHeader: (name: string) => unknown
  setHeader: (name: string, value: string) => void
}

export function commaSeparatedTrailer (reply: FastifyReply): void {
  const res = reply.raw as unknown as RawResponse
  const writeHead = res.writeHead
  res.writeHead = function writeHeadWithTrailerList (this: RawResponse, ...args: unknown[]) {
    const value = this.getHeader('trailer')
    if (typeof value === 'string') this.setHeader('trailer', value.split(' ').filter((name) => name !== '').join(', '))
    return writeHead.apply(this, args)
  }
}

/** Whether digest trailers are declared: the onDigestFields hook then runs with them. */
export function hasDigestTrailers (reply: FastifyReply): boolean {
  return DIGEST_FIELDS.some((name) => reply.hasTrailer(name))
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
