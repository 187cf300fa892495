// The content stage: the route's last onSend hook, after @fastify/compress
// (docs/design.md, "Where the hooks run"). It sees the bytes that will be
// sent and computes what the plan asks: Buffers are hashed once, when no
// coding changed them; streams are hashed chunk by chunk as they flow and
// their digests travel as trailers (when the client allows them) or as
// headers after buffering at most `maxBufferSize` bytes (docs/design.md,
// "Streams and trailers"). A 206's part is hashed as it flows (trailers),
// buffered when it fits in maxBufferSize, or else read from the file before
// sending.
import { pipeline, type Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { DigestTransform, collectUpTo, digestAll, type CheckedStream, type DigestResults } from '../../core/digest-stream'
import type { DigestParams } from '../../core/digest-params'
import { hashFile, type ByteRange } from '../../core/file-cache'
import type { FileResponse } from './static-files'
import { union, type ResponsePlan } from '../../core/response-plan'
import { declareTrailer, decidePrecondition, emitFields, reprDigests, setField, unencodedDigests, wholeOf } from './emit'
import { commaSeparatedTrailer } from '../../core/trailer-field'
import { TrailerHook } from './field-hook'
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
    // A HEAD whose Content-Length disagrees with what was hashed stands for
    // another body (e.g. @fastify/static's empty HEAD stream): omit it.
    const cl = reply.getHeader('content-length')
    if (state.file === null && cl !== undefined && Number(cl) !== state.reprBytes) identity = null
  } else {
    const bytes = (payload ?? '') as string | Buffer
    const unchanged = bytes === state.reprPayload || reply.getHeader('content-encoding') === state.reprEncoding
    if (unchanged) {
      // Nothing changed the bytes, or a hook after the representation stage
      // replaced them without a content coding (a route-level onSend hook of
      // the application's): the representation is what is sent, and one
      // pass serves every field.
      content = digestAll(partial ? plan.content : union(union(plan.content, plan.reprNeeded), plan.identityNeeded), bytes)
      identity = partial ? null : content
    } else {
      content = digestAll(plan.contentHashed, bytes)
      if (!partial && state.reprPayload !== null && plan.mode.identity) identity = digestAll(plan.identityNeeded, state.reprPayload)
    }
  }
  return emitFields(reply, payload, state, content, identity)
}

/**
 * Whether a 206's Content-Digest is read from the file before sending: it
 * can go neither as a trailer nor buffered within maxBufferSize.
 */
export function partReadFromFile (plan: ResponsePlan, params: DigestParams, range: ByteRange): boolean {
  return plan.content.length > 0 && !plan.trailers && range.end - range.start >= params.maxBufferSize
}

/** What the stream must match at its end: the digests the response is sent with. */
function expect (stream: CheckedStream, digests: DigestResults): void {
  for (const [a, v] of digests) stream.expected.set(a, v)
}

/** emitFields() for a file's stream, releasing the file when the answer is a 406 instead. */
function emitFileFields (
  reply: FastifyReply, stream: CheckedStream, state: ResponseState, content: DigestResults | null
): Payload {
  const out = emitFields(reply, stream, state, content, state.repr)
  if (out !== stream) stream.destroy()
  return out
}

/**
 * Content stage of a GET for a file, or null when the file's stream is to
 * be hashed as any stream. The whole file sent unchanged: its content digest
 * is the file's (cache). A 206's part: trailers or buffering as for any
 * stream, or, when neither is possible, the range hashed from the file
 * before sending. A file coded by @fastify/compress: as any stream.
 */
async function fileContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState, file: FileResponse
): Promise<Payload | null> {
  const { plan, params } = state
  const stream = state.fileStream as CheckedStream
  const range = file.range
  if (plan.reprFrom !== 'content') {
    // The representation digest is known now: decide the 406 rule before
    // anything is sent, so the content digest can still go as a trailer.
    const refused = decidePrecondition(reply, state, reprDigests(reply, wholeOf(reply, state, null, state.repr), plan.reprNeeded))
    if (refused !== null) {
      stream.destroy()
      ;(payload as Readable).destroy()
      return refused
    }
  }
  if (payload !== stream) return null
  if (range === null) {
    if (file.stale) return null
    // Often already at hand from the representation stage (even with fileCacheSize 0).
    const needed = plan.contentHashed
    const known = state.fileCoded
    const content = known !== null && needed.every((a) => known.has(a)) ? known : await state.context.files.digests(file, needed)
    if (content === null) return null
    expect(stream, content)
    return emitFileFields(reply, stream, state, content)
  }
  if (plan.content.length === 0) return emitFileFields(reply, stream, state, null)
  if (!partReadFromFile(plan, params, range)) return null
  // Neither trailers nor a buffer: read the part from the file first.
  const content = await hashFile(file, plan.content, range)
  if (content === null) request.log.debug({ path: file.path }, 'fastify-digest-fields: file changed while hashing the range, Content-Digest omitted')
  else expect(stream, content)
  return emitFileFields(reply, stream, state, content)
}

/** Content stage for streams: trailers when the plan allows them, else buffer up to maxBufferSize. */
export async function streamedContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload> {
  const { plan, params } = state
  const partial = plan.partial
  // A live stream without trailers: passed on as it is.
  if (plan.transport === 'none') return payload
  if (state.file !== null) {
    const out = await fileContent(request, reply, payload, state, state.file)
    if (out !== null) return out
  }
  const unchanged = payload === state.reprStream
  let hasher: DigestTransform
  if (unchanged) {
    hasher = state.reprStream as DigestTransform
  } else {
    hasher = new DigestTransform(plan.contentHashed)
    pipeline(payload, hasher, () => {})
  }
  // The identity representation: a stream hashed as it flowed, or a buffered
  // payload that compress turned into a stream.
  const identityOf = (): DigestResults | null => {
    if (state.file !== null) return state.repr
    if (partial) return null
    if (state.reprStream !== null) return state.reprStream.digests
    return digestAll(plan.identityNeeded, state.reprPayload as string | Buffer)
  }

  // As planned; a file's stream, too, once its precondition was decided
  // before sending (fileContent).
  if (plan.transport === 'trailers' || (plan.trailers && state.precondition === null)) {
    // Digests are known only at the end: declare them as trailers (RFC 9530 §2, §3).
    reply.removeHeader('content-length')
    const strict = plan.mode.strict
    const hook = params.onDigestFields === null ? null : new TrailerHook(params.onDigestFields, request, reply)
    declareTrailer(reply, 'content-digest', plan.content, strict, () => hasher.digests, hook)
    if (state.file !== null && plan.reprFrom !== 'content') {
      // A file's representation digest is known before any byte is sent.
      setField(reply, 'repr-digest', reprDigests(reply, wholeOf(reply, state, null, state.repr), plan.repr), plan.repr, strict)
    } else {
      declareTrailer(reply, 'repr-digest', plan.repr, strict, (r) =>
        reprDigests(r, plan.reprFrom === 'content' ? hasher.digests : identityOf(), plan.repr), hook)
    }
    if (state.file !== null) {
      // So is a file's Unencoded-Digest (its identity file's).
      setField(reply, 'unencoded-digest', unencodedDigests(reply, state, state.repr), plan.unencoded, true)
    } else {
      declareTrailer(reply, 'unencoded-digest', plan.unencoded, true, (r) => unencodedDigests(r, state, identityOf()), hook)
    }
    commaSeparatedTrailer(reply.raw)
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
