// The content stage, after @fastify/compress (docs/design.md, "Streams and trailers"): the bytes sent
// hashed; a stream's digests as trailers (RFC 9530 §2, §3), else buffered up to maxBufferSize, else omitted.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { collectUpTo, digestAll, type DigestResults } from '../../core/digest-stream'
import { union } from '../../core/response-plan'
import { serializeSelected } from '../../core/fields'
import type { DigestAlgorithm } from '../../../types/index'
import { commaSeparatedTrailer, declareTrailer, emitFields, reprDigests, unencodedDigests, wholeOf } from './emit'
import { TrailerHook, type DigestField } from './field-hook'
import { fileContent } from './static-files'
import { hashThrough } from './representation'
import type { Payload, ResponseState } from './reply-state'

/** A HEAD response has no content (RFC 9530 B.2): its Content-Digest is the empty string's. */
const NO_BYTES = Buffer.alloc(0)

/** Content stage for string, Buffer and empty payloads, and for every HEAD. */
export function bufferedContent (reply: FastifyReply, payload: Payload, state: ResponseState): Payload {
  const { plan } = state
  const partial = plan.partial
  let content: DigestResults | null = null
  let identity: DigestResults | null = state.repr
  if (plan.head) {
    content = digestAll(plan.content, NO_BYTES)
    if (identity === null && state.reprPayload !== null) {
      identity = digestAll(plan.identityNeeded, state.reprPayload)
      state.reprBytes = Buffer.byteLength(state.reprPayload)
    }
    // A Content-Length other than what was hashed stands for another body (@fastify/static's empty HEAD stream).
    const cl = reply.getHeader('content-length')
    if (state.file === null && cl !== undefined && Number(cl) !== state.reprBytes) identity = null
  } else {
    const bytes = (payload ?? '') as string | Buffer
    const unchanged = bytes === state.reprPayload || reply.getHeader('content-encoding') === state.reprEncoding
    if (unchanged) {
      // The same bytes, or replaced without a coding (the application's onSend hook): one pass for every field.
      content = digestAll(partial ? plan.content : union(union(plan.content, plan.reprNeeded), plan.identityNeeded), bytes)
      identity = partial ? null : content
    } else {
      content = digestAll(plan.contentHashed, bytes)
      if (!partial && state.reprPayload !== null && plan.mode.identity) identity = digestAll(plan.identityNeeded, state.reprPayload)
    }
  }
  return emitFields(reply, payload, state, content, identity)
}

/** Content stage for streams: trailers when the plan allows them, else buffer up to maxBufferSize. */
export async function streamedContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload> {
  const { plan, params } = state
  const partial = plan.partial
  if (plan.transport === 'none') return payload
  if (state.file !== null) {
    const out = await fileContent(request, reply, payload, state, state.file)
    if (out !== null) return out
  }
  const reprStream = state.reprStream
  const hasher = reprStream !== null && payload === reprStream ? reprStream : hashThrough(payload, plan.contentHashed)
  // The identity representation: a stream hashed as it flowed, or bytes compress turned into a stream.
  const identityOf = (): DigestResults | null => {
    if (state.file !== null) return state.repr
    if (partial) return null
    if (reprStream !== null) return reprStream.digests
    return digestAll(plan.identityNeeded, state.reprPayload as string | Buffer)
  }

  // As planned; a file's stream, too, once its precondition was decided before sending (fileContent).
  if (plan.transport === 'trailers' || (plan.trailers && state.precondition === null)) {
    reply.removeHeader('content-length')
    const strict = plan.mode.strict
    const hook = params.onDigestFields === null ? null : new TrailerHook(params.onDigestFields, request, reply)
    // A file's representation digests are known before any byte is sent: headers.
    const file = state.file !== null
    const fields: Array<[DigestField, readonly DigestAlgorithm[], boolean, boolean, (r: FastifyReply) => DigestResults | null]> = [
      ['content-digest', plan.content, strict, false, () => hasher.digests],
      ['repr-digest', plan.repr, strict, file && plan.reprFrom !== 'content',
        (r) => reprDigests(r, plan.reprFrom === 'content' ? hasher.digests : wholeOf(r, state, null, identityOf()), plan.repr)],
      ['unencoded-digest', plan.unencoded, true, file, (r) => unencodedDigests(r, state, identityOf())]
    ]
    for (const [name, algs, asBytes, now, compute] of fields) {
      if (!now) {
        declareTrailer(reply, name, algs, asBytes, compute, hook)
        continue
      }
      const value = serializeSelected(compute(reply), algs, asBytes)
      if (value !== null) reply.header(name, value)
    }
    commaSeparatedTrailer(reply)
    return hasher
  }

  const collected = await collectUpTo(hasher, params.maxBufferSize)
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
