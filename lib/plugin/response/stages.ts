// The response stages (docs/design.md, "Where the hooks run", "Streams and trailers"): before @fastify/compress, the
// identity representation and the plan completed; after it, the bytes sent, a stream's digests as trailers (RFC 9530
// §2, §3), else buffered up to maxBufferSize, else omitted; what they hand each other: response-state.ts.
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import { DigestTransform, collectUpTo, digestAll, type DigestResults } from '../../core/digest-stream'
import { isLiveStream, planDelivery, union, type FieldPlan } from '../../core/response-plan'
import { checkedFileStream, fileContent, fileDigests, fileFailed, resolveFileResponse } from './static-files'
import { DigestTrailers, commaSeparatedTrailer, emitFields, reprOf, unencodedDigests, type Compute } from './emit'
import { TrailerHook } from './field-hook'
import { ResponseState, type Payload, type RouteResponse } from './response-state'

/** `stream` piped through a new hasher of `algorithms`, which passes its bytes on. */
export function hashThrough (stream: NodeJS.ReadableStream, algorithms: readonly DigestAlgorithm[]): DigestTransform {
  const hasher = new DigestTransform(algorithms)
  pipeline(stream, hasher, () => {})
  return hasher
}

/** An early stream error is fastify's to answer (it reads a stream's error state when it takes the stream). */
function heldError (): void {}

/**
 * A fetch Response or a web stream as fastify takes it (lib/reply.js send): status and headers on the reply, a Node
 * stream.
 */
export function unwrapPayload (reply: FastifyReply, payload: Payload): Payload {
  if (payload === null || typeof payload !== 'object') return payload
  if (Object.prototype.toString.call(payload) === '[object Response]') {
    const response = payload as Response
    reply.code(response.status)
    for (const [name, value] of response.headers) reply.header(name, value)
    // An onSend hook cannot replace a payload with undefined: an empty body is ''.
    return response.body === null ? '' : Readable.fromWeb(response.body as WebReadableStream)
  }
  const web = typeof (payload as { getReader?: unknown }).getReader === 'function'
  return web ? Readable.fromWeb(payload as WebReadableStream) : payload
}

/** The representation stage for a string, a Buffer or no payload (synchronous: no promise per response). */
export function bytesRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, fields: FieldPlan, route: RouteResponse
): ResponseState {
  const bytes = typeof payload === 'string' || Buffer.isBuffer(payload)
  const plan = planDelivery(fields, { kind: bytes ? 'bytes' : 'none', live: false, status: reply.statusCode })
  const state = new ResponseState(plan, route, reply, null)
  // No payload: an empty representation, except for a HEAD, whose handler need not produce one.
  if (bytes) state.reprPayload = payload
  else if (request.method !== 'HEAD') state.reprPayload = ''
  return state
}

// A HEAD of a stream has no content to carry trailers: the representation hashed now, up to maxBufferSize.
// Another length than the Content-Length (read before compress removes it) stands for another body.
async function hashHeadStream (
  stream: NodeJS.ReadableStream, reply: FastifyReply, state: ResponseState
): Promise<Readable> {
  const length = reply.getHeader('content-length')
  const hasher = hashThrough(stream, state.plan.identityNeeded)
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

/** The representation stage for a stream; resolves to the payload to pass on, and the state. */
export async function streamRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, fields: FieldPlan, route: RouteResponse
): Promise<[Payload, ResponseState]> {
  // Held across the awaits below: an early error must not be an uncaught exception.
  payload.on('error', heldError)
  const status = reply.statusCode
  const file = status === 200 || status === 206 ? await resolveFileResponse(request, reply, payload) : null
  // A file is never live: its digests are known before it is sent.
  const { live: liveOption, liveTypes } = route.params
  const live = file === null && isLiveStream(liveOption, liveTypes, reply.getHeader('content-type'))
  const plan = planDelivery(fields, { kind: 'stream', live, status })
  const state = new ResponseState(plan, route, reply, file)
  if (file !== null) {
    await fileDigests(state, file)
    return [file.stream === null ? payload : checkedFileStream(reply, state, file, payload), state]
  }
  if (plan.transport === 'declared' || (plan.transport === 'none' && !plan.head)) return [payload, state]
  if (plan.transport === 'none') {
    ;(payload as Readable).destroy()
    return [Readable.from([]), state]
  }
  if (plan.head) return [await hashHeadStream(payload, reply, state), state]
  // Strict mode without Unencoded-Digest: the representation is what the content stage sees.
  if (!plan.mode.identity) return [payload, state]
  // The content algorithms ride along: an unchanged stream is hashed once.
  state.reprStream = hashThrough(payload, union(union(plan.identityNeeded, plan.reprNeeded), plan.content))
  return [state.reprStream, state]
}

/** A HEAD response has no content (RFC 9530 B.2): its Content-Digest is the empty string's. */
const NO_BYTES = Buffer.alloc(0)

// A HEAD's identity digests: those known, else of the representation's bytes; none when its Content-Length stands for
// another body than what was hashed (@fastify/static's empty HEAD stream).
function headIdentity (reply: FastifyReply, state: ResponseState): DigestResults | null {
  let identity = state.repr
  if (identity === null && state.reprPayload !== null) {
    identity = digestAll(state.plan.identityNeeded, state.reprPayload)
    state.reprBytes = Buffer.byteLength(state.reprPayload)
  }
  const cl = reply.getHeader('content-length')
  return state.file === null && cl !== undefined && Number(cl) !== state.reprBytes ? null : identity
}

/** Content stage for string, Buffer and empty payloads, and for every HEAD. */
export function bufferedContent (reply: FastifyReply, payload: Payload, state: ResponseState): Payload {
  const { plan } = state
  if (plan.head) return emitFields(reply, payload, state, digestAll(plan.content, NO_BYTES), headIdentity(reply, state))
  const partial = plan.partial
  const bytes = (payload ?? '') as string | Buffer
  if (bytes === state.reprPayload || reply.getHeader('content-encoding') === state.reprEncoding) {
    // The same bytes, or replaced without a coding (the application's onSend hook): one pass for every field.
    const all = partial ? plan.content : union(union(plan.content, plan.reprNeeded), plan.identityNeeded)
    const content = digestAll(all, bytes)
    return emitFields(reply, payload, state, content, partial ? null : content)
  }
  const reprPayload = state.reprPayload
  const identity = !partial && reprPayload !== null && plan.mode.identity
    ? digestAll(plan.identityNeeded, reprPayload)
    : state.repr
  return emitFields(reply, payload, state, digestAll(plan.contentHashed, bytes), identity)
}

/** A stream's digest fields as trailers (a file's representation digests, known before any byte is sent: headers). */
function declareTrailers (
  request: FastifyRequest, reply: FastifyReply, state: ResponseState, hasher: DigestTransform,
  identityOf: () => DigestResults | null
): void {
  const { plan, params } = state
  reply.removeHeader('content-length')
  const hook = params.onDigestFields === null ? null : new TrailerHook(params.onDigestFields, request, reply)
  const trailers = new DigestTrailers(reply, hook)
  const file = state.file !== null
  const strict = plan.mode.strict
  const fromContent = plan.reprFrom === 'content'
  const repr: Compute = (r) => reprOf(r, state, hasher.digests, fromContent ? null : identityOf())
  trailers.declare('content-digest', plan.content, strict, () => hasher.digests)
  trailers.declare('repr-digest', plan.repr, strict, repr, file && !fromContent)
  trailers.declare('unencoded-digest', plan.unencoded, true, (r) => unencodedDigests(r, state, identityOf()), file)
  commaSeparatedTrailer(reply)
}

/** Content stage for streams: trailers when the plan allows them, else buffer up to maxBufferSize. */
export async function streamedContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload> {
  const { plan, params } = state
  if (plan.transport === 'none') return payload
  if (state.file !== null) {
    const out = await fileContent(request, reply, payload, state)
    if (out !== null) return out
  }
  const reprStream = state.reprStream
  const hasher = reprStream !== null && payload === reprStream ? reprStream : hashThrough(payload, plan.contentHashed)
  // The identity representation: a stream hashed as it flowed, or bytes compress turned into a stream.
  const identityOf = (): DigestResults | null => {
    if (state.file !== null) return state.repr
    if (plan.partial) return null
    if (reprStream !== null) return reprStream.digests
    return digestAll(plan.identityNeeded, state.reprPayload as string | Buffer)
  }

  // As planned; a file's stream, too, once its precondition was decided before sending (fileContent).
  if (plan.transport === 'trailers' || (plan.trailers && state.precondition === null)) {
    declareTrailers(request, reply, state, hasher, identityOf)
    return hasher
  }

  state.collecting = true
  const collected = await collectUpTo(hasher, params.maxBufferSize).catch((err: unknown) => {
    if (state.fileFailure === null) throw err
    return null
  }).finally(() => { state.collecting = false })
  if (collected === null || state.fileFailure !== null) return fileFailed(request, reply, state)
  if (collected.chunks === null) {
    state.omitted = 'over-max-buffer-size'
    // A file's representation digest does not depend on the content.
    if (state.file !== null) return emitFields(reply, collected.rest, state, null, state.repr)
    return collected.rest
  }
  const body = Buffer.concat(collected.chunks)
  reply.header('content-length', body.byteLength)
  return emitFields(reply, body, state, hasher.digests, plan.mode.identity ? identityOf() : null)
}
