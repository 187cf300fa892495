// The response stages (docs/design.md, "Where the hooks run", "Streams and trailers"): before @fastify/compress, the
// identity representation and the plan completed; after it, the bytes sent, a stream's digests as trailers (RFC 9530
// §2, §3), else buffered up to maxBufferSize, else omitted. ResponseState: what they hand each other (kResponseState on
// the request), and the fields given up on (`reply.digestsOmitted`, a warning once per route and reason).
import { Readable, pipeline } from 'node:stream'
import type { ReadableStream as WebReadableStream } from 'node:stream/web'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm, DigestOmission, ResponseDigestField } from '../../../types/index'
import type { DigestParams } from '../../core/option-checks'
import {
  DigestTransform, collectUpTo, digestAll, type CheckedStream, type DigestResults
} from '../../core/digest-stream'
import type { FileDigestCache } from '../../core/file-cache'
import {
  isLiveStream, planDelivery, uncoded, union, type FieldPlan, type Precondition, type ResponsePlan
} from '../../core/response-plan'
import {
  checkedFileStream, fileContent, fileDigests, fileFailed, resolveFileResponse, type FileResponse
} from './static-files'
import { commaSeparatedTrailer, declareTrailer, emitFields, reprOf, unencodedDigests } from './emit'
import { TrailerHook } from './field-hook'

export type Payload = unknown
export type Done = (err: Error | null, payload?: Payload) => void
type OmissionReason = DigestOmission['reason']

/**
 * What the response stages share (one per plugin instance): the file cache, the omissions logged (by reason and route).
 */
export interface ResponseContext { readonly files: FileDigestCache, readonly warned: Set<string> }

const WANTED: ReadonlyArray<ResponseDigestField | 'Signature'> = ['Content-Digest', 'Repr-Digest', 'Unencoded-Digest', 'Signature']
const AS_TRAILERS = 'clients that send "TE: trailers" get them as trailers'
const RAISE = 'raise maxBufferSize (plugin or route option) above the'
const SIGNED = 'a signature covers Unencoded-Digest in the header section'
const DECLARE = 'declare the digest with reply.setReprDigest() when it is known, or'
const BUFFER = 'set digest: { live: false } on the route to buffer the stream (up to maxBufferSize)'

// The warning's why and fix, by reason: of a GET (`$T`: how to get trailers), a signed GET (the signature covers a
// header), a HEAD (no content to carry trailers, RFC 9110 §9.3.2); the GET's when the same.
type Omission = Record<'why' | 'fix', string> & Partial<Record<'whyHead' | 'fixSigned' | 'fixHead', string>>
const OMISSIONS: Record<OmissionReason, Omission> = {
  'over-max-buffer-size': {
    why: 'the streamed response is larger than maxBufferSize and goes without trailers',
    whyHead: 'a HEAD hashes at most maxBufferSize bytes of the streamed representation, and it is larger',
    fix: `${RAISE} response's size, or $T`,
    fixSigned: `${RAISE} response's size: ${SIGNED}`,
    fixHead: `${DECLARE} ${RAISE} representation's size`
  },
  'live-stream': {
    why: 'a live stream is never held back for a digest, and it goes without trailers',
    whyHead: 'the HEAD of a live stream is answered at once, without reading the stream',
    fix: `$T; or ${BUFFER} instead`,
    fixSigned: `${BUFFER}: ${SIGNED}`,
    fixHead: `${DECLARE} set digest: { live: false } on the route to read the stream (up to maxBufferSize)`
  },
  'file-not-hashed': {
    why: 'the file\'s whole-file digests are not known yet (fileHashing: \'background\' answers without waiting for them)',
    fix: 'later responses carry them once the file is hashed; to wait for the hash instead, set fileHashing: \'wait\', or ship checksum files next to the files (fileSidecars)'
  }
}

export class ResponseState {
  /** The plan's precondition until it is decided; null once decided early (files). */
  precondition: Precondition | null
  /** The representation stage's payload: the bytes, or the hasher put around the stream. */
  reprPayload: string | Buffer | null = null
  reprStream: DigestTransform | null = null
  /**
   * Representation digests known at the representation stage (HEAD of a stream, a file's), and how many bytes they
   * cover.
   */
  repr: DigestResults | null = null
  reprBytes = 0
  /**
   * The identity digests are of the uncoded representation (no coding of the route's own, or a pre-compressed file's
   * original).
   */
  identityUncoded: boolean
  /** Digests of the whole file as sent, coding included (strict HEAD and 206; what a GET's stream must match). */
  fileCoded: DigestResults | null = null
  /** A GET's file stream as passed on: checked at its end against the digests sent with it. */
  fileStream: CheckedStream | null = null
  /** The content is being read into memory before anything is sent (fields in the header section). */
  collecting = false
  /** The file's check failed while its content was read into memory: answered with a 500 instead. */
  fileFailure: Error | null = null
  omitted: OmissionReason | null
  /** Content-Encoding as the representation stage saw it (compress sets its own later). */
  readonly reprEncoding: unknown

  // `file`: the file a @fastify/static response stands for (then `repr` holds its identity digests).
  constructor (
    readonly plan: ResponsePlan, readonly params: DigestParams, readonly context: ResponseContext, reply: FastifyReply, readonly file: FileResponse | null
  ) {
    this.precondition = plan.precondition
    this.reprEncoding = reply.getHeader('content-encoding')
    this.identityUncoded = uncoded(this.reprEncoding)
    this.omitted = plan.omitted
  }

  /**
   * Tell the application, and the log once per route and reason, which wanted fields the reply carries neither as
   * header nor trailer.
   */
  reportOmitted (request: FastifyRequest, reply: FastifyReply): void {
    const reason = this.omitted
    if (reason === null) return
    const lists = [this.plan.content, this.plan.repr, this.plan.unencoded, this.plan.signatures]
    const fields = WANTED.filter((field, i) => (lists[i] as readonly unknown[]).length > 0 && !reply.hasHeader(field) && !reply.hasTrailer(field))
    if (fields.length === 0) return
    ;(reply as { digestsOmitted: DigestOmission | null }).digestsOmitted = { reason, fields }
    const route = request.is404 ? '(404)' : `${request.method} ${request.routeOptions.url as string}`
    const key = `${reason} ${route}`
    if (this.context.warned.has(key)) return
    this.context.warned.add(key)
    const text = OMISSIONS[reason]
    const head = request.method === 'HEAD'
    const asTrailers = this.params.trailers ? AS_TRAILERS : `set the trailers option to true, and ${AS_TRAILERS}`
    const fix = (head ? text.fixHead : fields.includes('Signature') ? text.fixSigned : undefined) ?? text.fix.replace('$T', asTrailers)
    request.log.warn(
      { route, reason, fields },
      `fastify-digest-fields: ${fields.join(', ')} not sent on ${route}: ${(head ? text.whyHead : undefined) ?? text.why}. Fix: ${fix} (logged once per route)`
    )
  }
}

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
  return typeof (payload as { getReader?: unknown }).getReader === 'function' ? Readable.fromWeb(payload as WebReadableStream) : payload
}

/** The representation stage for a string, a Buffer or no payload (synchronous: no promise per response). */
export function bytesRepresentation (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, fields: FieldPlan, params: DigestParams, context: ResponseContext
): ResponseState {
  const bytes = typeof payload === 'string' || Buffer.isBuffer(payload)
  const plan = planDelivery(fields, { kind: bytes ? 'bytes' : 'none', live: false, status: reply.statusCode })
  const state = new ResponseState(plan, params, context, reply, null)
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
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, fields: FieldPlan, params: DigestParams, context: ResponseContext
): Promise<[Payload, ResponseState]> {
  // Held across the awaits below: an early error must not be an uncaught exception.
  payload.on('error', heldError)
  const status = reply.statusCode
  const file = status === 200 || status === 206 ? await resolveFileResponse(request, reply, payload) : null
  // A file is never live: its digests are known before it is sent.
  const live = file === null && isLiveStream(params.live, params.liveTypes, reply.getHeader('content-type'))
  const plan = planDelivery(fields, { kind: 'stream', live, status })
  const state = new ResponseState(plan, params, context, reply, file)
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
    if (bytes === state.reprPayload || reply.getHeader('content-encoding') === state.reprEncoding) {
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
    if (plan.partial) return null
    if (reprStream !== null) return reprStream.digests
    return digestAll(plan.identityNeeded, state.reprPayload as string | Buffer)
  }

  // As planned; a file's stream, too, once its precondition was decided before sending (fileContent).
  if (plan.transport === 'trailers' || (plan.trailers && state.precondition === null)) {
    reply.removeHeader('content-length')
    const hook = params.onDigestFields === null ? null : new TrailerHook(params.onDigestFields, request, reply)
    // A file's representation digests are known before any byte is sent: headers.
    const file = state.file !== null
    const repr = (r: FastifyReply): DigestResults | null => reprOf(r, state, hasher.digests, plan.reprFrom === 'content' ? null : identityOf())
    declareTrailer(reply, 'content-digest', plan.content, plan.mode.strict, () => hasher.digests, hook)
    declareTrailer(reply, 'repr-digest', plan.repr, plan.mode.strict, repr, hook, file && plan.reprFrom !== 'content')
    declareTrailer(reply, 'unencoded-digest', plan.unencoded, true, (r) => unencodedDigests(r, state, identityOf()), hook, file)
    commaSeparatedTrailer(reply)
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
