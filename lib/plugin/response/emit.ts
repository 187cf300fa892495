// Writing the digest fields on the reply: as headers, as trailers
// (RFC 9530 §2, §3 and draft-ietf-httpbis-unencoded-digest §3: every field
// may be a trailer), or a 406 instead; and Vary.
import type { FastifyReply } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import type { DigestResults } from '../../core/digest-stream'
import { digestFieldOf, serializeSelected } from '../../core/fields'
import { getDeclared, getDeclaredUnencoded } from './declared'
import { PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { sameList } from '../../core/response-plan'
import { STALE_PROBLEM, preconditionFails } from '../../core/precondition'
import { signatureFields, type IntegritySignature } from '../../core/integrity'
import type { TrailerHook } from './field-hook'
import type { ResponseState, Payload } from './reply-state'

const VARY_TOKENS = ['Want-Content-Digest', 'Want-Repr-Digest', 'Want-Unencoded-Digest']
const VARY_VALUE = VARY_TOKENS.join(', ')
const VARY_SIGNING_TOKENS = [...VARY_TOKENS, 'Accept-Signature']
const VARY_SIGNING_VALUE = VARY_SIGNING_TOKENS.join(', ')
type DigestTrailer = 'content-digest' | 'repr-digest' | 'unencoded-digest'
const TRAILERS: readonly DigestTrailer[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/**
 * Add the Want-* fields to Vary, and Accept-Signature when the plugin holds
 * SRI keys (`signing`): each one can change which fields a response carries
 * (RFC 9110 §12.5.5).
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

/**
 * Signature-Input and Signature of SRI `signatures` over the Unencoded-Digest
 * value just written (lib/core/integrity.ts). A reply that set either
 * field itself keeps its own: none is added.
 */
export function writeSignatures (reply: FastifyReply, signatures: readonly IntegritySignature[], unencoded: string): void {
  if (signatures.length === 0 || reply.hasHeader('signature-input') || reply.hasHeader('signature')) return
  const fields = signatureFields(signatures, unencoded)
  reply.header('signature-input', fields.input)
  reply.header('signature', fields.signature)
}

/**
 * Content-Digest, Repr-Digest and Unencoded-Digest as one `value`: the bytes
 * sent are the uncoded representation. `signatures` sign Unencoded-Digest.
 */
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

/** Representation digests for `algs`: declared ones first, then computed ones. */
export function reprDigests (
  reply: FastifyReply, computed: DigestResults | null, algs: readonly DigestAlgorithm[]
): DigestResults | null {
  return withDeclared(getDeclared(reply), computed, algs)
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

/**
 * Unencoded-Digest's digests for the plan's algorithms: those declared with
 * setUnencodedDigest() first; then, when the representation stage saw no
 * content coding of the route's own, those declared with setReprDigest()
 * and `identity` (the uncoded representation's). Null when none is known:
 * the plugin never decodes a route's own coded bytes to hash them.
 */
export function unencodedDigests (
  reply: FastifyReply, state: ResponseState, identity: DigestResults | null
): DigestResults | null {
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
 * 406 Not Acceptable: the client's Repr-Digest names another representation.
 * Its content is the problem details; its Repr-Digest the current
 * representation's, its Content-Digest (when one is planned) the problem's,
 * or for a HEAD the empty content's (RFC 9530 B.2). A HEAD has no content
 * but the Content-Length a GET's 406 would have (RFC 9110 §8.6, §9.3.2).
 */
function notAcceptable (reply: FastifyReply, state: ResponseState, repr: DigestResults): Buffer | string {
  const { plan } = state
  reply.code(406)
  for (const h of ['content-encoding', 'content-range', 'content-digest', 'repr-digest', 'unencoded-digest']) {
    reply.removeHeader(h)
  }
  reply.header('content-type', PROBLEM_CONTENT_TYPE)
  reply.header('content-length', STALE_PROBLEM.byteLength)
  setField(reply, 'repr-digest', repr, [plan.preconditionAlgorithm], plan.mode.strict)
  const content = plan.head ? '' : STALE_PROBLEM
  const contentDigest = digestFieldOf(plan.content, content, plan.mode.strict)
  if (contentDigest !== null) reply.header('content-digest', contentDigest)
  return content
}

/**
 * The 406 rule, at the moment the whole representation's digests `repr`
 * (declared ones included) are known: the 406 content, or null when the
 * response goes on. Decided once: the precondition is then dropped.
 */
export function decidePrecondition (reply: FastifyReply, state: ResponseState, repr: DigestResults | null): Buffer | string | null {
  const fails = preconditionFails(state.precondition, reply.statusCode, repr)
  state.precondition = null
  return fails ? notAcceptable(reply, state, repr as DigestResults) : null
}

/**
 * Set the digest fields as headers, or answer 406. `identity` holds digests
 * of the representation before content coding (Unencoded-Digest's, and
 * the default mode's Repr-Digest); in strict mode a full response's
 * representation is its (coded) content.
 */
export function emitFields (
  reply: FastifyReply, payload: Payload, state: ResponseState,
  content: DigestResults | null, identity: DigestResults | null
): Payload {
  const { plan } = state
  const strict = plan.mode.strict
  const repr = reprDigests(reply, wholeOf(reply, state, content, identity), plan.reprNeeded)
  const refused = decidePrecondition(reply, state, repr)
  if (refused !== null) return refused
  const contentValue = serializeSelected(content, plan.content, strict)
  if (contentValue !== null) reply.header('content-digest', contentValue)
  // Usually both fields carry the same digests of the same bytes: one value.
  const reprValue = repr === content && sameList(plan.repr, plan.content)
    ? contentValue
    : serializeSelected(repr, plan.repr, strict)
  if (reprValue !== null) reply.header('repr-digest', reprValue)
  // Unencoded-Digest values are always Byte Sequences (draft-ietf-httpbis-unencoded-digest §3).
  if (plan.unencoded.length > 0) {
    const unencoded = setField(reply, 'unencoded-digest', unencodedDigests(reply, state, identity), plan.unencoded, true)
    if (unencoded !== null) writeSignatures(reply, plan.signatures, unencoded)
  }
  return payload
}

/**
 * Declare a digest trailer whose value is read once the body has been sent.
 * A trailer callback that fails is dropped by fastify: that is how a digest
 * that turned out to be unknown (a 206 without a declared representation
 * digest) is left out. With an onDigestFields hook, the value waits for it
 * (lib/plugin/response/field-hook.ts).
 */
export function declareTrailer (
  reply: FastifyReply, name: DigestTrailer, algs: readonly DigestAlgorithm[], strict: boolean,
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

/** Whether digest trailers are declared: the onDigestFields hook then runs with them. */
export function hasDigestTrailers (reply: FastifyReply): boolean {
  for (const name of TRAILERS) if (reply.hasTrailer(name)) return true
  return false
}

/**
 * A reply sent again: its first payload, a stream, failed before anything
 * went out, and fastify now sends the error. The digest trailers declared
 * for that stream, and the framing fastify set for them (already copied to
 * the raw response), must not stay: the error body is sent with a
 * Content-Length, and gets digests of its own.
 */
export function dropTrailers (reply: FastifyReply): void {
  let declared = false
  for (const name of TRAILERS) {
    if (reply.hasTrailer(name)) {
      reply.removeTrailer(name)
      declared = true
    }
  }
  if (!declared) return
  for (const name of ['transfer-encoding', 'trailer']) {
    reply.removeHeader(name)
    reply.raw.removeHeader(name)
  }
}
