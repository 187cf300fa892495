// Response digests (docs/design.md: "Two digests per response", "The 406 rule").
//
// Two onSend stages, both route-level hooks added in onRoute with a microtask,
// so they land after every onRoute hook's synchronous push (@fastify/compress
// pushes its onSend from an onRoute hook, in either registration order;
// docs/design.md, "Where the hooks run"):
// * the representation stage, first among the route's onSend hooks: it sees
//   the identity representation before compress (and, for an automatic HEAD
//   route, the GET handler's payload before fastify drops it);
// * the content stage, last: it sees the bytes that will be sent.
// Being route-level, they have the route's options at hand (no lookup per
// request). 404s have no route: an instance-level onSend runs both stages for
// them with the plugin's options.
//
// The usual response (a string or Buffer, no Want-* field, no precondition,
// nothing declared) of a route without other onSend hooks takes a shortcut:
// one hook writes the route's unsolicited fields, hashed in one step, with no
// per-request state (usualResponse).
//
// Buffers are hashed once, in the content stage, when no coding changed them;
// streams are hashed chunk by chunk as they flow and their digests travel as
// trailers (when the client allows them) or as headers after buffering at most
// `maxBufferSize` bytes.
//
// Files served by @fastify/static (lib/file-digests.ts) are recognized in the
// representation stage: their whole-file digests come from a cache, hashed on
// the side before anything is sent, so a HEAD and a 206 carry the whole
// file's Repr-Digest and an unchanged 200 needs neither trailers nor
// buffering. A 206's part is hashed as it flows (trailers), buffered when it
// fits in maxBufferSize, or else read from the file before sending.
import { Readable, pipeline } from 'node:stream'
import type { ReadStream } from 'node:fs'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm, ResponseDigestField } from '../types/index'
import type { DigestParams } from './options'
import type { RouteHookInstaller } from './route-hooks'
import { selectAlgorithms } from './negotiation'
import { digestFieldOf, fieldWriter, parseDigestField, parseWantField, serializeSelected, type FieldWriter } from './fields'
import { DigestTransform, collectUpTo, digestAll, type DigestResults } from './digest-stream'
import { getDeclared } from './declared'
import { kResponseState, kStaticFile } from './symbols'
import { FileDigestCache, hashFile, identityFile, resolveFileResponse, type FileResponse } from './file-digests'
import { digestsEqual } from './verification'
import { isLiveStream } from './live-streams'
import { OmissionLog, missingFields, type OmissionReason } from './omissions'
import { commaSeparatedTrailer } from './trailer-field'

type Payload = unknown
type Done = (err: Error | null, payload?: Payload) => void

interface ResponseState {
  readonly params: DigestParams
  readonly contentAlgs: readonly DigestAlgorithm[]
  readonly reprAlgs: readonly DigestAlgorithm[]
  /**
   * The request's Repr-Digest on a GET/HEAD (the 406 conditional), enabled
   * members only; set to null once decided early (files).
   */
  conditional: Map<DigestAlgorithm, Buffer> | null
  /** Algorithms to compute over the representation. */
  readonly reprNeeded: readonly DigestAlgorithm[]
  /** The string/Buffer payload seen by the representation stage. */
  reprPayload: string | Buffer | null
  /** The hashing wrapper put around a streamed representation. */
  reprStream: DigestTransform | null
  /** Representation digests known at the representation stage (HEAD of a stream). */
  repr: DigestResults | null
  /** How many bytes `repr` covers. */
  reprBytes: number
  /** Content-Encoding as the representation stage saw it (compress sets its own later). */
  reprEncoding: unknown
  /** The file a @fastify/static response stands for (then `repr` holds its identity digests). */
  file: FileResponse | null
  /** Strict mode: digests of the whole file as sent, coding included (for HEAD and 206). */
  fileCoded: DigestResults | null
  /** Why digest fields were given up on, if they were (lib/omissions.ts). */
  omitted: OmissionReason | null
  readonly files: FileDigestCache
  readonly omissions: OmissionLog
}

function ignoreError (): void {}

/** A route whose response carries no digest field: only Vary is added. */
const kNothing = Symbol('nothing')

const EMPTY = Buffer.alloc(0)
const VARY_TOKENS = ['Want-Content-Digest', 'Want-Repr-Digest']
const VARY_VALUE = VARY_TOKENS.join(', ')
const TRAILERS = ['content-digest', 'repr-digest', 'unencoded-digest']

/**
 * The algorithms of `a` (a list without repeats), then those of `b` not
 * already listed. Runs for every response, usually with `b` empty or adding
 * nothing: `a` itself is then returned, without allocating.
 */
function union (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] {
  let out: DigestAlgorithm[] | null = null
  for (let i = 0; i < b.length; i++) {
    const algorithm = b[i] as DigestAlgorithm
    if (!(out ?? a).includes(algorithm)) (out ??= [...a]).push(algorithm)
  }
  return out ?? a
}

/** No algorithm (shared: never mutated). */
const NONE: readonly DigestAlgorithm[] = []

function isNodeStream (p: unknown): p is NodeJS.ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { pipe?: unknown }).pipe === 'function'
}

function isWebStream (p: unknown): p is ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { getReader?: unknown }).getReader === 'function'
}

function isResponse (p: unknown): p is Response {
  return p !== null && typeof p === 'object' && Object.prototype.toString.call(p) === '[object Response]'
}

/** Add the Want-* fields to Vary: either one can change which digests a response carries. */
function addVary (reply: FastifyReply): void {
  const current = reply.getHeader('vary')
  if (current === undefined) {
    reply.header('vary', VARY_VALUE)
    return
  }
  const value = Array.isArray(current) ? current.join(', ') : String(current)
  if (value.trim() === '*') return
  const have = new Set(value.split(',').map((t) => t.trim().toLowerCase()))
  const missing = VARY_TOKENS.filter((t) => !have.has(t.toLowerCase()))
  if (missing.length > 0) reply.header('vary', value === '' ? missing.join(', ') : `${value}, ${missing.join(', ')}`)
}

function conditionalOf (request: FastifyRequest, params: DigestParams): Map<DigestAlgorithm, Buffer> | null {
  const method = request.method
  if (!params.conditional || (method !== 'GET' && method !== 'HEAD')) return null
  const header = request.headers['repr-digest']
  if (header === undefined) return null
  let received
  try {
    received = parseDigestField(header, 'Repr-Digest')
  } catch {
    // A precondition that cannot be parsed cannot be evaluated: ignore it (RFC 8941 §4.2).
    return null
  }
  if (received === null) return null
  const out = new Map<DigestAlgorithm, Buffer>()
  for (const a of params.algorithms) {
    const v = received.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out.size > 0 ? out : null
}

/** The algorithm of the 406 response's Repr-Digest: sha-256, else the server's first. */
function conditionalAlgorithm (params: DigestParams): DigestAlgorithm {
  return params.algorithms.includes('sha-256') ? 'sha-256' : params.algorithms[0] as DigestAlgorithm
}

function newState (request: FastifyRequest, params: DigestParams, files: FileDigestCache, omissions: OmissionLog): ResponseState | typeof kNothing {
  const headers = request.headers
  const wantContent = parseWantField(headers['want-content-digest'])
  const wantRepr = parseWantField(headers['want-repr-digest'])
  // Without any Want-* field, selection gives the unsolicited algorithms as
  // configured (validated as enabled ones, in server order): skip it, as most
  // requests carry none.
  const noWant = wantContent === null && wantRepr === null
  const contentAlgs = noWant
    ? params.contentDigest
    : selectAlgorithms({ algorithms: params.algorithms, want: wantContent, otherWant: wantRepr, unsolicited: params.contentDigest })
  const reprAlgs = noWant
    ? params.reprDigest
    : selectAlgorithms({ algorithms: params.algorithms, want: wantRepr, otherWant: wantContent, unsolicited: params.reprDigest })
  const conditional = conditionalOf(request, params)
  if (contentAlgs.length === 0 && reprAlgs.length === 0 && conditional === null) return kNothing
  const reprNeeded = union(
    reprAlgs,
    conditional === null ? NONE : [...conditional.keys(), conditionalAlgorithm(params)]
  )
  return {
    params,
    contentAlgs,
    reprAlgs,
    conditional,
    reprNeeded,
    reprPayload: null,
    reprStream: null,
    repr: null,
    reprBytes: 0,
    reprEncoding: undefined,
    file: null,
    fileCoded: null,
    omitted: null,
    files,
    omissions
  }
}

/**
 * HEAD of a streamed route: there is no content to carry trailers, so hash
 * the representation now (at most maxBufferSize bytes, then give up) and let
 * fastify drop an empty stream instead.
 */
async function hashHeadStream (stream: NodeJS.ReadableStream, reply: FastifyReply, state: ResponseState): Promise<Readable> {
  // Read before compression can remove it: a stream of another length than
  // the Content-Length stands for another body (@fastify/static's empty HEAD
  // stream), so it is not the representation.
  const length = reply.getHeader('content-length')
  const hasher = new DigestTransform(state.reprNeeded)
  pipeline(stream, hasher, () => {})
  const collected = await collectUpTo(hasher, state.params.maxBufferSize)
  if (collected.chunks !== null) {
    if (length === undefined || Number(length) === collected.bytes) state.repr = hasher.digests
    state.reprBytes = collected.bytes
  } else {
    state.omitted = 'over-max-buffer-size'
    ;(collected.rest as Readable).destroy()
  }
  return Readable.from([])
}

/**
 * HEAD of a live stream: answered at once. The stream is not read (fastify
 * destroys a streamed payload the response did not finish reading, too:
 * lib/reply.js sendStream), so its Repr-Digest is unknown unless declared.
 */
function liveHead (stream: NodeJS.ReadableStream, state: ResponseState): Readable {
  ;(stream as Readable).destroy()
  state.omitted = 'live-stream'
  return Readable.from([])
}

/**
 * A file served by @fastify/static: its representation digests come from
 * the whole-file cache, for the file before content coding (the original
 * next to a pre-compressed one) and, in strict mode, for the file as sent.
 * The stream is left untouched. Only 200 and 206 stand for the file.
 */
async function fileRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<boolean> {
  const status = reply.statusCode
  if (status !== 200 && status !== 206) return false
  const file = await resolveFileResponse(request, reply, payload, state.files)
  if (file === null) return false
  state.file = file
  // Another version than @fastify/send described: hashed as it flows.
  if (file.stale) return true
  const { params, files } = state
  // Default mode: the identity representation. Strict mode: the coded one,
  // plus the identity one for Unencoded-Digest.
  const identityAlgs = identityNeeded(params) ? (params.strict ? state.reprAlgs : state.reprNeeded) : NONE
  const codedAlgs = params.strict ? state.reprNeeded : NONE
  const identity = identityAlgs.length === 0 ? file : await identityFile(file, state.reprEncoding)
  if (identity === file) {
    state.repr = await files.lookup(file, union(identityAlgs, codedAlgs), file.cachedOnly)
    state.fileCoded = state.repr
  } else {
    state.fileCoded = await files.lookup(file, codedAlgs, file.cachedOnly)
    state.repr = identity === null ? null : await files.lookup(identity, identityAlgs, file.cachedOnly)
  }
  return true
}

/**
 * The representation stage. Synchronous for strings, Buffers and empty
 * payloads (most responses: no promise, no extra microtask); a Promise for
 * streams, whose file digests or HEAD hashing may have to be awaited.
 */
function representationStage (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, state: ResponseState
): Payload | Promise<Payload> {
  if (isResponse(payload)) {
    // Unwrap a fetch Response here, as fastify would later, so it can be hashed.
    reply.code(payload.status)
    for (const [name, value] of payload.headers) reply.header(name, value)
    // (An onSend hook cannot replace a payload with undefined: an empty body is ''.)
    payload = payload.body === null ? '' : Readable.fromWeb(payload.body as import('node:stream/web').ReadableStream)
  } else if (isWebStream(payload)) {
    payload = Readable.fromWeb(payload as import('node:stream/web').ReadableStream)
  }
  state.reprEncoding = reply.getHeader('content-encoding')
  if (isNodeStream(payload)) return streamRepresentation(request, reply, payload, state)
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) state.reprPayload = payload
  // No payload: an empty representation, except for a HEAD, whose handler
  // need not produce one (the representation is then unknown).
  else if (request.method !== 'HEAD') state.reprPayload = ''
  return payload
}

async function streamRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload> {
  // Held across the awaits of the file digests before anything listens to
  // it: an early error (a file deleted before @fastify/send opened it) must
  // not be an uncaught exception. Fastify still answers it: it reads a
  // stream's error state when it takes the stream.
  payload.on('error', ignoreError)
  if (await fileRepresentation(request, reply, payload, state)) return payload
  const params = state.params
  // A live stream (lib/live-streams.ts) is never held back.
  const live = isLiveStream(params.live, params.liveTypes, reply.getHeader('content-type'))
  if (request.method === 'HEAD') return live ? liveHead(payload, state) : await hashHeadStream(payload, reply, state)
  if (live) {
    // A Repr-Digest precondition cannot be evaluated before the stream is
    // sent, so it is not (the 406 rule is the plugin's own, not RFC
    // 9530's: README "Conditional GET"); the digests go as trailers, or
    // not at all.
    state.conditional = null
    if (!trailersAllowed(request, params)) {
      state.omitted = 'live-stream'
      return payload
    }
  }
  // Strict mode without Unencoded-Digest: the representation is whatever
  // the content stage sees (coded or not); hash it there, once.
  if (!identityNeeded(state.params)) return payload
  // Hash the representation as it flows; the content algorithms ride along
  // so an unchanged (uncompressed) stream is hashed once for both fields.
  const hasher = new DigestTransform(union(state.reprNeeded, state.contentAlgs))
  pipeline(payload, hasher, () => {})
  state.reprStream = hasher
  return hasher
}

/** Representation digests for `algs`: declared ones first, then computed ones. */
function reprDigests (
  reply: FastifyReply, computed: DigestResults | null, algs: readonly DigestAlgorithm[]
): DigestResults | null {
  const declared = getDeclared(reply)
  if (declared === null) return computed
  const out: DigestResults = new Map(computed ?? [])
  for (const a of algs) {
    const v = declared.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out
}

function conditionalFails (reply: FastifyReply, state: ResponseState, repr: DigestResults | null): boolean {
  // Only a successful response stands for the target's current representation.
  if (state.conditional === null || repr === null || reply.statusCode < 200 || reply.statusCode > 299) return false
  for (const [a, expected] of state.conditional) {
    const actual = repr.get(a)
    if (actual === undefined) return false
    if (!digestsEqual(actual, expected)) return true
  }
  return false
}

/** Set field `name` to the digests of `algs` found in `digests`, if any. */
function setField (
  reply: FastifyReply, name: string, digests: DigestResults | null, algs: readonly DigestAlgorithm[], strict: boolean
): void {
  const value = serializeSelected(digests, algs, strict)
  if (value !== null) reply.header(name, value)
}

function sameList (a: readonly DigestAlgorithm[], b: readonly DigestAlgorithm[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** 406 Not Acceptable: the client's Repr-Digest names another representation. */
function notAcceptable (reply: FastifyReply, state: ResponseState, repr: DigestResults): string {
  const alg = conditionalAlgorithm(state.params)
  reply.code(406)
  for (const h of ['content-encoding', 'content-type', 'content-length', 'content-range', 'content-digest', 'unencoded-digest']) {
    reply.removeHeader(h)
  }
  setField(reply, 'repr-digest', repr, [alg], state.params.strict)
  return ''
}

function trailersAllowed (request: FastifyRequest, params: DigestParams): boolean {
  // Fastify sends trailers to anyone (and forces chunked on HTTP/1.0): only
  // use them when the client said it accepts them (RFC 9110 §10.1.4).
  if (!params.trailers || request.raw.httpVersion === '1.0') return false
  const te = request.headers.te
  return typeof te === 'string' && /(?:^|,)\s*trailers\s*(?:[,;]|$)/i.test(te)
}

/**
 * Whether a full response needs the digest of its identity representation:
 * always in the default mode (it is the Repr-Digest); in strict mode only for
 * Unencoded-Digest (the Repr-Digest is the coded content's).
 */
function identityNeeded (params: DigestParams): boolean {
  return !params.strict || params.unencodedDigest
}

function noContentStatus (status: number): boolean {
  return status < 200 || status === 204 || status === 304
}

/**
 * Whether a full response's digests of its unchanged bytes are only sent:
 * nothing compares them (no 406 conditional), none is declared, no
 * Unencoded-Digest, and the two fields do not ask for different sets.
 */
function onlySent (reply: FastifyReply, state: ResponseState): boolean {
  return state.conditional === null && !state.params.unencodedDigest && getDeclared(reply) === null &&
    oneValue(state.contentAlgs, state.reprAlgs) !== null
}

/**
 * The algorithms of the one value Content-Digest and Repr-Digest both carry
 * when they ask for the same set (or one asks for none), else null.
 */
function oneValue (contentAlgs: readonly DigestAlgorithm[], reprAlgs: readonly DigestAlgorithm[]): readonly DigestAlgorithm[] | null {
  if (contentAlgs.length === 0) return reprAlgs
  return reprAlgs.length === 0 || sameList(contentAlgs, reprAlgs) ? contentAlgs : null
}

/**
 * The usual response (onlySent): the bytes sent are the representation, so
 * Content-Digest and Repr-Digest are one value, hashed and serialized in one
 * step.
 */
function sendFields (reply: FastifyReply, payload: Payload, state: ResponseState, bytes: string | Buffer): Payload {
  const algs = oneValue(state.contentAlgs, state.reprAlgs) as readonly DigestAlgorithm[]
  const value = digestFieldOf(algs, bytes, state.params.strict) as string
  if (state.contentAlgs.length > 0) reply.header('content-digest', value)
  if (state.reprAlgs.length > 0) reply.header('repr-digest', value)
  return payload
}

/**
 * A route's unsolicited fields, worked out once per route: the algorithms
 * both fields send when nothing asks otherwise, as one value written in one
 * step. Null when the route's options rule that out: Unencoded-Digest, or
 * different unsolicited sets for the two fields.
 */
interface Unsolicited {
  /** The route's `conditional` option: a GET's Repr-Digest is then a precondition. */
  readonly conditional: boolean
  readonly write: FieldWriter | null
  readonly content: boolean
  readonly repr: boolean
}

function unsolicitedOf (params: DigestParams): Unsolicited | null {
  const { contentDigest, reprDigest } = params
  const algs = oneValue(contentDigest, reprDigest)
  if (params.unencodedDigest || algs === null) return null
  return {
    conditional: params.conditional,
    write: fieldWriter(algs, params.strict),
    content: contentDigest.length > 0,
    repr: reprDigest.length > 0
  }
}

/**
 * The usual response, when nothing stands between the two stages: a string
 * or Buffer (no stream, no HEAD, no 206, a status with content), no Want-*
 * field, no Repr-Digest to compare, nothing declared, the reply's first
 * send. Its bytes are the representation, so the fields are the route's
 * unsolicited ones with one value (what onlySent/sendFields would write),
 * without per-request state. False, having changed nothing, for any other
 * response: the stages then run in full.
 */
function usualResponse (request: FastifyRequest, reply: FastifyReply, payload: Payload, usual: Unsolicited): boolean {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return false
  const headers = request.headers
  const method = request.method
  const status = reply.statusCode
  if (
    method === 'HEAD' || status === 206 || noContentStatus(status) ||
    headers['want-content-digest'] !== undefined || headers['want-repr-digest'] !== undefined ||
    (usual.conditional && method === 'GET' && headers['repr-digest'] !== undefined) ||
    getDeclared(reply) !== null || (request as unknown as { [kResponseState]: unknown })[kResponseState] !== kNothing
  ) return false
  addVary(reply)
  if (usual.write !== null) {
    const value = usual.write(payload)
    if (usual.content) reply.header('content-digest', value)
    if (usual.repr) reply.header('repr-digest', value)
  }
  return true
}

/** Content stage for string, Buffer and empty payloads. */
function bufferedContent (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, state: ResponseState
): Payload {
  const { params } = state
  const status = reply.statusCode
  const isHead = request.method === 'HEAD'
  const partial = status === 206
  let content: DigestResults | null = null
  let identity: DigestResults | null = state.repr
  if (isHead) {
    // A HEAD response has no content (RFC 9530 B.2).
    content = digestAll(state.contentAlgs, EMPTY)
    if (identity === null && state.reprPayload !== null) {
      identity = digestAll(state.reprNeeded, state.reprPayload)
      state.reprBytes = Buffer.byteLength(state.reprPayload)
    }
    // A HEAD whose Content-Length disagrees with what was hashed stands for
    // another body (e.g. @fastify/static's empty HEAD stream): omit it.
    const cl = reply.getHeader('content-length')
    if (state.file === null && cl !== undefined && Number(cl) !== state.reprBytes) identity = null
  } else {
    const bytes = (payload ?? '') as string | Buffer
    const unchanged = bytes === state.reprPayload || reply.getHeader('content-encoding') === state.reprEncoding
    if (unchanged && !partial && onlySent(reply, state)) return sendFields(reply, payload, state, bytes)
    if (unchanged) {
      // Nothing changed the bytes, or a hook after the representation stage
      // replaced them without a content coding (a route-level onSend hook of
      // the application's): the representation is what is sent, and one
      // pass serves both fields.
      content = digestAll(union(state.contentAlgs, partial ? NONE : state.reprNeeded), bytes)
      identity = partial ? null : content
    } else {
      content = digestAll(union(state.contentAlgs, params.strict && !partial ? state.reprNeeded : NONE), bytes)
      if (!partial && state.reprPayload !== null && identityNeeded(params)) identity = digestAll(state.reprNeeded, state.reprPayload)
    }
  }
  return finish(reply, payload, state, content, identity, isHead || partial)
}

/**
 * Digests of the whole representation as the mode defines it. Default mode:
 * before content coding (`identity`). Strict mode: coding included, so a full
 * response's is its content; for HEAD and 206 it is the identity one, or the
 * whole file as sent, unless a coding was applied after the representation
 * stage (@fastify/compress on an explicit HEAD route): that coded
 * representation was never seen, so it is unknown.
 */
function wholeOf (
  reply: FastifyReply, state: ResponseState, content: DigestResults | null, identity: DigestResults | null, notFull: boolean
): DigestResults | null {
  if (!state.params.strict) return identity
  if (!notFull) return content
  if (reply.getHeader('content-encoding') !== state.reprEncoding) return null
  return state.file === null ? identity : state.fileCoded
}

/**
 * Set the digest fields. `identity` holds digests of the representation
 * before content coding; in strict mode a full response's representation is
 * its (coded) content.
 */
function finish (
  reply: FastifyReply, payload: Payload, state: ResponseState,
  content: DigestResults | null, identity: DigestResults | null, notFull: boolean
): Payload {
  const { params } = state
  const repr = reprDigests(reply, wholeOf(reply, state, content, identity, notFull), state.reprNeeded)
  if (conditionalFails(reply, state, repr)) return notAcceptable(reply, state, repr as DigestResults)
  const contentValue = serializeSelected(content, state.contentAlgs, params.strict)
  if (contentValue !== null) reply.header('content-digest', contentValue)
  // Usually both fields carry the same digests of the same bytes: one value.
  const reprValue = repr === content && sameList(state.reprAlgs, state.contentAlgs)
    ? contentValue
    : serializeSelected(repr, state.reprAlgs, params.strict)
  if (reprValue !== null) reply.header('repr-digest', reprValue)
  if (params.unencodedDigest && state.reprAlgs.length > 0) {
    setField(reply, 'unencoded-digest', reprDigests(reply, identity, state.reprAlgs), state.reprAlgs, true)
  }
  return payload
}

/**
 * Declare a digest trailer whose value is read once the body has been sent.
 * A trailer callback that fails is dropped by fastify: that is how a digest
 * that turned out to be unknown (a 206 without a declared representation
 * digest) is left out.
 */
function trailer (
  reply: FastifyReply, name: string, algs: readonly DigestAlgorithm[], strict: boolean,
  compute: (reply: FastifyReply) => DigestResults | null
): void {
  if (algs.length === 0) return
  reply.trailer(name, (r, _payload, done) => {
    const value = serializeSelected(compute(r), algs, strict)
    if (value === null) done(new Error(`no ${name} value`))
    else done(null, value)
  })
}

/** Content stage for streams: trailers when allowed, else buffer up to maxBufferSize. */
async function streamedContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload> {
  const { params } = state
  const partial = reply.statusCode === 206
  // A live stream without trailers: passed on as it is (streamRepresentation).
  if (state.omitted === 'live-stream') return payload
  if (state.file !== null) {
    const out = await fileContent(request, reply, payload, state, state.file)
    if (out !== kAsStream) return out
  }
  const unchanged = payload === state.reprStream
  let hasher: DigestTransform
  if (unchanged) {
    hasher = state.reprStream as DigestTransform
  } else {
    hasher = new DigestTransform(union(state.contentAlgs, params.strict && !partial ? state.reprNeeded : NONE))
    pipeline(payload, hasher, () => {})
  }
  // The identity representation: a stream hashed as it flowed, or a buffered
  // payload that compress turned into a stream.
  const identityOf = (): DigestResults | null => {
    if (state.file !== null) return state.repr
    if (partial) return null
    if (state.reprStream !== null) return state.reprStream.digests
    return digestAll(state.reprNeeded, state.reprPayload as string | Buffer)
  }

  if (state.conditional === null && trailersAllowed(request, params)) {
    // Digests are known only at the end: declare them as trailers (RFC 9530 §2, §3).
    reply.removeHeader('content-length')
    const strict = params.strict
    trailer(reply, 'content-digest', state.contentAlgs, strict, () => hasher.digests)
    if (state.file !== null && (!strict || partial)) {
      // A file's representation digest is known before any byte is sent.
      setField(reply, 'repr-digest', reprDigests(reply, wholeOf(reply, state, null, state.repr, partial), state.reprAlgs), state.reprAlgs, strict)
    } else {
      trailer(reply, 'repr-digest', state.reprAlgs, strict, (r) =>
        reprDigests(r, strict && !partial ? hasher.digests : identityOf(), state.reprAlgs))
    }
    if (params.unencodedDigest) {
      trailer(reply, 'unencoded-digest', state.reprAlgs, true, (r) => reprDigests(r, identityOf(), state.reprAlgs))
    }
    commaSeparatedTrailer(reply.raw)
    return hasher
  }

  const collected = await collectUpTo(hasher, params.maxBufferSize)
  if (collected.chunks === null) {
    state.omitted = 'over-max-buffer-size'
    // A file's representation digest does not depend on the content.
    if (state.file !== null) return finish(reply, collected.rest, state, null, state.repr, partial)
    return collected.rest
  }
  const body = Buffer.concat(collected.chunks)
  reply.header('content-length', body.byteLength)
  return finish(reply, body, state, hasher.digests, identityNeeded(params) ? identityOf() : null, partial)
}

/** fileContent's answer when the generic stream handling should go on. */
const kAsStream = Symbol('as-stream')

/** finish(), releasing the file when the answer is a 406 instead. */
function finishFile (
  reply: FastifyReply, stream: ReadStream, state: ResponseState, content: DigestResults | null, notFull: boolean
): Payload {
  const out = finish(reply, stream, state, content, state.repr, notFull)
  if (out !== stream) stream.destroy()
  return out
}

/**
 * Content stage of a GET for a file. The whole file sent unchanged: its
 * content digest is the file's (cache). A 206's part: trailers or buffering
 * as for any stream, or, when neither is possible, the range hashed from the
 * file before sending. A file coded by @fastify/compress: as any stream.
 */
async function fileContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState, file: FileResponse
): Promise<Payload | typeof kAsStream> {
  const { params } = state
  const stream = file.stream as ReadStream
  const range = file.range
  if (!params.strict || range !== null) {
    // The representation digest is known now: decide the 406 rule before
    // anything is sent, so the content digest can still go as a trailer.
    const repr = reprDigests(reply, wholeOf(reply, state, null, state.repr, range !== null), state.reprNeeded)
    if (conditionalFails(reply, state, repr)) {
      stream.destroy()
      ;(payload as Readable).destroy()
      return notAcceptable(reply, state, repr as DigestResults)
    }
    state.conditional = null
  }
  if (payload !== stream) return kAsStream
  if (range === null) {
    if (file.stale) return kAsStream
    // Often already at hand from the representation stage (even with fileCacheSize 0).
    const needed = union(state.contentAlgs, params.strict ? state.reprNeeded : NONE)
    const known = state.fileCoded
    const content = known !== null && needed.every((a) => known.has(a)) ? known : await state.files.digests(file, needed)
    return content === null ? kAsStream : finishFile(reply, stream, state, content, false)
  }
  if (state.contentAlgs.length === 0) return finishFile(reply, stream, state, null, true)
  if (trailersAllowed(request, params) || range.end - range.start < params.maxBufferSize) return kAsStream
  // Neither trailers nor a buffer: read the part from the file first.
  const content = await hashFile(file, state.contentAlgs, range)
  if (content === null) request.log.debug({ path: file.path }, 'fastify-digest-fields: file changed while hashing the range, Content-Digest omitted')
  return finishFile(reply, stream, state, content, true)
}

/**
 * A reply sent again: its first payload, a stream, failed before anything
 * went out, and fastify now sends the error. The digest trailers declared
 * for that stream, and the framing fastify set for them (already copied to
 * the raw response), must not stay: the error body is sent with a
 * Content-Length, and gets digests of its own.
 */
function dropTrailers (reply: FastifyReply): void {
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

/** Tell the application (and the log, once per route) which wanted fields were given up on. */
function reportOmitted (request: FastifyRequest, reply: FastifyReply, state: ResponseState): void {
  if (state.omitted === null) return
  const wanted: ResponseDigestField[] = []
  if (state.contentAlgs.length > 0) wanted.push('Content-Digest')
  if (state.reprAlgs.length > 0) wanted.push('Repr-Digest')
  if (state.reprAlgs.length > 0 && state.params.unencodedDigest) wanted.push('Unencoded-Digest')
  state.omissions.report(request, reply, state.omitted, missingFields(reply, wanted), state.params.trailers)
}

function contentStage (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
  const state = (request as unknown as { [kResponseState]: ResponseState | typeof kNothing })[kResponseState]
  addVary(reply)
  if (state === kNothing) {
    done(null, payload)
    return
  }
  if (noContentStatus(reply.statusCode)) {
    // No content: no Content-Digest; Repr-Digest only when the route declared it.
    setField(reply, 'repr-digest', getDeclared(reply), state.reprAlgs, state.params.strict)
    done(null, payload)
    return
  }
  if (request.method !== 'HEAD' && isNodeStream(payload)) {
    streamedContent(request, reply, payload, state).then((p) => {
      reportOmitted(request, reply, state)
      done(null, p)
    }, done)
    return
  }
  const out = bufferedContent(request, reply, payload, state)
  reportOmitted(request, reply, state)
  done(null, out)
}

/**
 * After the representation stage: on to compress and the content stage, or
 * the content stage now when nothing stands between the two (a 404, a route
 * without other onSend hooks).
 */
function representationDone (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, both: boolean): void {
  if (both) contentStage(request, reply, payload, done)
  else done(null, payload)
}

export function installResponseDigests (fastify: FastifyInstance, params: DigestParams): RouteHookInstaller<DigestParams> {
  // A primitive initial value: a request the representation stage did not
  // look at carries no digest fields.
  fastify.decorateRequest(kResponseState as unknown as string, kNothing)
  fastify.decorateReply(kStaticFile as unknown as string, null)
  fastify.decorateReply('digestsOmitted', null)
  const files = new FileDigestCache(params.fileCacheSize)
  const omissions = new OmissionLog()

  function digestRepresentation (
    request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, routeParams: DigestParams, both: boolean
  ): void {
    // A state left by an earlier send: this one is fastify's error after it.
    if ((request as unknown as { [kResponseState]: unknown })[kResponseState] !== kNothing) {
      dropTrailers(reply)
      ;(reply as { digestsOmitted: unknown }).digestsOmitted = null
    }
    const state = newState(request, routeParams, files, omissions)
    ;(request as unknown as { [kResponseState]: unknown })[kResponseState] = state
    if (state === kNothing) {
      representationDone(request, reply, payload, done, both)
      return
    }
    const out = representationStage(request, reply, payload, state)
    if (out instanceof Promise) out.then((p) => representationDone(request, reply, p, done, both), done)
    else representationDone(request, reply, out, done, both)
  }

  // 404s never reach onRoute (and compress never touches them): an instance
  // hook runs both stages for them, with the plugin's options.
  const usual = unsolicitedOf(params)
  fastify.addHook('onSend', function digestNotFound (request, reply, payload, done) {
    if (!request.is404 || (usual !== null && usualResponse(request, reply, payload, usual))) done(null, payload)
    else digestRepresentation(request, reply, payload, done as Done, params, true)
  })

  return {
    onRoute (_routeOptions, routeParams) {
      // The route's own hooks: its options at hand, no lookup per request.
      function digestReprStage (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
        digestRepresentation(request, reply, payload, done, routeParams, false)
      }
      const usual = unsolicitedOf(routeParams)
      function digestBothStages (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
        if (usual !== null && usualResponse(request, reply, payload, usual)) done(null, payload)
        else digestRepresentation(request, reply, payload, done, routeParams, true)
      }
      // The representation stage first among the route's onSend hooks
      // (before compress), the content stage last (after it); with no other
      // onSend hook on the route, one hook runs both (lib/route-hooks.ts).
      return { onSendAround: { before: digestReprStage, after: contentStage, alone: digestBothStages } }
    }
  }
}
