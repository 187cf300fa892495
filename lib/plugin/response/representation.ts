// The representation stage: the route's first onSend hook, before
// @fastify/compress (docs/design.md, "Where the hooks run"). It sees the
// identity representation (and, for an automatic HEAD route, the GET
// handler's payload before fastify drops it), completes the plan with the
// payload's facts, and keeps what the content stage needs: the bytes, a
// hashing wrapper around a stream, or a file's whole-file digests.
//
// Files served by @fastify/static (lib/plugin/response/static-files.ts) are recognized
// here: their whole-file digests come from a cache, hashed on the side
// before anything is sent, so a HEAD and a 206 carry the whole file's
// Repr-Digest and an unchanged 200 needs neither trailers nor buffering.
// What a GET then streams is checked against the digests it was sent with
// (CheckedStream): the file may have changed after they were taken.
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestParams } from '../../core/digest-params'
import { CheckedStream, DigestTransform, collectUpTo } from '../../core/digest-stream'
import { FST_DIGEST_FILE_CHANGED } from '../../core/errors'
import { partReadFromFile } from './content'
import { identityFile, resolveFileResponse, type FileResponse } from './static-files'
import { isLiveStream } from '../../core/live-streams'
import { NONE, planDelivery, union, type FieldPlan, type PayloadFacts } from '../../core/response-plan'
import { newState, type Payload, type ResponseContext, type ResponseState } from './reply-state'

export function isNodeStream (p: unknown): p is NodeJS.ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { pipe?: unknown }).pipe === 'function'
}

function isWebStream (p: unknown): p is ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { getReader?: unknown }).getReader === 'function'
}

function isResponse (p: unknown): p is Response {
  return p !== null && typeof p === 'object' && Object.prototype.toString.call(p) === '[object Response]'
}

/** An early stream error is fastify's to answer (it reads a stream's error state when it takes the stream). */
function heldError (): void {}

/**
 * A fetch Response or a web stream as fastify would take it later: status
 * and headers on the reply, the body as a Node stream, so it can be hashed.
 */
export function unwrapPayload (reply: FastifyReply, payload: Payload): Payload {
  if (isResponse(payload)) {
    reply.code(payload.status)
    for (const [name, value] of payload.headers) reply.header(name, value)
    // (An onSend hook cannot replace a payload with undefined: an empty body is ''.)
    return payload.body === null ? '' : Readable.fromWeb(payload.body as WebReadableStream)
  }
  return isWebStream(payload) ? Readable.fromWeb(payload as WebReadableStream) : payload
}

/**
 * The representation stage for a string, a Buffer or no payload
 * (synchronous: most responses, no promise, no extra microtask).
 */
export function bytesRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, fields: FieldPlan, params: DigestParams, context: ResponseContext
): ResponseState {
  const bytes = typeof payload === 'string' || Buffer.isBuffer(payload)
  const facts: PayloadFacts = { kind: bytes ? 'bytes' : 'none', live: false, status: reply.statusCode }
  const state = newState(planDelivery(fields, facts), params, context, reply.getHeader('content-encoding'), null)
  if (bytes) state.reprPayload = payload
  // No payload: an empty representation, except for a HEAD, whose handler
  // need not produce one (the representation is then unknown).
  else if (request.method !== 'HEAD') state.reprPayload = ''
  return state
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
  const hasher = new DigestTransform(state.plan.identityNeeded)
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
 * A file's representation digests, from the whole-file cache: for the file
 * before content coding (the original next to a pre-compressed one) and, in
 * strict mode, for the file as sent. The stream is left untouched.
 */
async function fileDigests (state: ResponseState, file: FileResponse): Promise<void> {
  // Another version than @fastify/send described: hashed as it flows.
  if (file.stale) return
  const { files } = state.context
  const { fileIdentity, coded } = state.plan.mode
  const identity = fileIdentity.length === 0 ? file : await identityFile(file, state.reprEncoding)
  // A pre-compressed file's original is the uncoded representation.
  if (identity !== file && identity !== null) state.identityUncoded = true
  if (identity === file) {
    state.repr = await files.digests(file, union(fileIdentity, coded))
    state.fileCoded = state.repr
  } else {
    state.fileCoded = await files.digests(file, coded)
    state.repr = identity === null ? null : await files.digests(identity, fileIdentity)
  }
  // Being hashed in the background: left out for now.
  if (state.params.fileHashing === 'background' && (state.fileCoded === null || (identity !== null && state.repr === null))) {
    state.omitted = 'file-not-hashed'
  }
}

/**
 * A GET's file stream, checked at its end against the digests of the bytes
 * it sends that were taken before sending (docs/design.md, "Static files"):
 * the whole file's for a 200, the part's when the content stage reads a
 * 206's part from the file. On a mismatch the file's digests are dropped
 * from the cache and the response is cut off: the client sees an incomplete
 * response (HTTP/1.1) or a reset stream (HTTP/2), never a clean end.
 */
function checkedFileStream (reply: FastifyReply, state: ResponseState, file: FileResponse, stream: NodeJS.ReadableStream): CheckedStream {
  const { plan, params } = state
  const { range } = file
  // A stale file's stream is hashed as any stream: nothing is taken before sending.
  let algorithms = NONE
  if (range === null && !file.stale) algorithms = union(plan.contentHashed, [...(state.fileCoded?.keys() ?? NONE)])
  else if (range !== null && !file.stale && partReadFromFile(plan, params, range)) algorithms = plan.content
  const check = new CheckedStream(algorithms, (algorithm) => {
    const err = new FST_DIGEST_FILE_CHANGED(file.path, algorithm)
    state.context.files.drop(file.path)
    // With an error: an HTTP/2 stream is then reset with INTERNAL_ERROR (a
    // reset with NO_ERROR would end it cleanly for the client).
    reply.raw.destroy(err)
    return err
  })
  // The content stage adds a 200's Content-Digest and a 206's part digest.
  if (range === null && state.fileCoded !== null) for (const [a, v] of state.fileCoded) check.expected.set(a, v)
  pipeline(stream, check, () => {})
  state.fileStream = check
  return check
}

/** The representation stage for a stream; resolves to the payload to pass on, and the state. */
export async function streamRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, fields: FieldPlan, params: DigestParams, context: ResponseContext
): Promise<[Payload, ResponseState]> {
  // Held across the awaits of the file digests before anything listens to
  // it: an early error (a file deleted before @fastify/send opened it) must
  // not be an uncaught exception.
  payload.on('error', heldError)
  const status = reply.statusCode
  const reprEncoding = reply.getHeader('content-encoding')
  // Only 200 and 206 stand for a file of @fastify/static.
  const file = status === 200 || status === 206 ? await resolveFileResponse(request, reply, payload) : null
  // A file is never live: its digests are known before it is sent.
  const live = file === null && isLiveStream(params.live, params.liveTypes, reply.getHeader('content-type'))
  const plan = planDelivery(fields, { kind: 'stream', live, status })
  const state = newState(plan, params, context, reprEncoding, file)
  if (file !== null) {
    await fileDigests(state, file)
    return [file.stream === null ? payload : checkedFileStream(reply, state, file, payload), state]
  }
  // No content (1xx, 204, 304): nothing to hash (lib/core/response-plan.ts).
  if (plan.transport === 'declared') return [payload, state]
  if (plan.transport === 'none') {
    // A live stream not held back: passed on as it is, or, for a HEAD,
    // answered at once with its stream not read (its Repr-Digest is then
    // unknown unless declared).
    if (!plan.head) return [payload, state]
    ;(payload as Readable).destroy()
    return [Readable.from([]), state]
  }
  if (plan.head) return [await hashHeadStream(payload, reply, state), state]
  // Strict mode without Unencoded-Digest: the representation is whatever
  // the content stage sees (coded or not); hash it there, once.
  if (!plan.mode.identity) return [payload, state]
  // Hash the representation as it flows; the content algorithms (and in
  // strict mode the representation's) ride along so an unchanged
  // (uncompressed) stream is hashed once for every field.
  const hasher = new DigestTransform(union(union(plan.identityNeeded, plan.reprNeeded), plan.content))
  pipeline(payload, hasher, () => {})
  state.reprStream = hasher
  return [hasher, state]
}
