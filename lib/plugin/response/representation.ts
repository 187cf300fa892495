// The representation stage, before @fastify/compress: the identity representation (an automatic HEAD's
// too, before fastify drops it), the plan completed, and what the content stage needs: the bytes, a
// hashing wrapper around a stream, or a file's whole-file digests (static-files.ts).
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import type { DigestParams } from '../../core/option-checks'
import { DigestTransform, collectUpTo } from '../../core/digest-stream'
import { checkedFileStream, fileDigests, resolveFileResponse } from './static-files'
import { isLiveStream, planDelivery, union, type FieldPlan } from '../../core/response-plan'
import { ResponseState, type Payload, type ResponseContext } from './reply-state'

export function isNodeStream (p: unknown): p is NodeJS.ReadableStream {
  return p !== null && typeof p === 'object' && typeof (p as { pipe?: unknown }).pipe === 'function'
}

/** `stream` piped through a new hasher of `algorithms`, which passes its bytes on. */
export function hashThrough (stream: NodeJS.ReadableStream, algorithms: readonly DigestAlgorithm[]): DigestTransform {
  const hasher = new DigestTransform(algorithms)
  pipeline(stream, hasher, () => {})
  return hasher
}

/** An early stream error is fastify's to answer (it reads a stream's error state when it takes the stream). */
function heldError (): void {}

/** A fetch Response or a web stream as fastify takes it (lib/reply.js send): status and headers on the reply, a Node stream. */
export function unwrapPayload (reply: FastifyReply, payload: Payload): Payload {
  if (payload === null || typeof payload !== 'object') return payload
  if (Object.prototype.toString.call(payload) === '[object Response]') {
    const response = payload as Response
    reply.code(response.status)
    for (const [name, value] of response.headers) reply.header(name, value)
    // An onSend hook cannot replace a payload with undefined: an empty body is ''.
    return response.body === null ? '' : Readable.fromWeb(response.body as WebReadableStream)
  }
  return typeof (payload as { getReader?: unknown }).getReader === 'function' ? Readable.fromWeb(payload as WebReadableStream) : payload
}

/** The representation stage for a string, a Buffer or no payload (synchronous: no promise per response). */
export function bytesRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, fields: FieldPlan, params: DigestParams, context: ResponseContext
): ResponseState {
  const bytes = typeof payload === 'string' || Buffer.isBuffer(payload)
  const plan = planDelivery(fields, { kind: bytes ? 'bytes' : 'none', live: false, status: reply.statusCode })
  const state = new ResponseState(plan, params, context, reply.getHeader('content-encoding'), null)
  // No payload: an empty representation, except for a HEAD, whose handler need not produce one.
  if (bytes) state.reprPayload = payload
  else if (request.method !== 'HEAD') state.reprPayload = ''
  return state
}

/**
 * A HEAD of a stream has no content to carry trailers: the representation hashed now, up to maxBufferSize.
 * Another length than the Content-Length (read before compress removes it) stands for another body.
 */
async function hashHeadStream (stream: NodeJS.ReadableStream, reply: FastifyReply, state: ResponseState): Promise<Readable> {
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
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, fields: FieldPlan, params: DigestParams, context: ResponseContext
): Promise<[Payload, ResponseState]> {
  // Held across the awaits below: an early error must not be an uncaught exception.
  payload.on('error', heldError)
  const status = reply.statusCode
  const reprEncoding = reply.getHeader('content-encoding')
  const file = status === 200 || status === 206 ? await resolveFileResponse(request, reply, payload) : null
  // A file is never live: its digests are known before it is sent.
  const live = file === null && isLiveStream(params.live, params.liveTypes, reply.getHeader('content-type'))
  const plan = planDelivery(fields, { kind: 'stream', live, status })
  const state = new ResponseState(plan, params, context, reprEncoding, file)
  if (file !== null) {
    await fileDigests(state, file)
    return [file.stream === null ? payload : checkedFileStream(reply, state, file, payload), state]
  }
  if (plan.transport === 'declared') return [payload, state]
  if (plan.transport === 'none') {
    if (!plan.head) return [payload, state]
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
