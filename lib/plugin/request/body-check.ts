// Request verification: request.digestVerification and the route's hooks (docs/architecture.md,
// "The Fastify lifecycle, mapped to files"; docs/design.md, "Request verification").
import type { DoneFuncWithErrOrRes, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { finished, Readable } from 'node:stream'
import type { DigestAlgorithm, DigestVerification, FieldVerification } from '../../../types/index'
import { digestAll, isNodeStream, MultiDigester, type DigestResults, type EndCheck, type StreamTap } from '../../core/digest-stream'
import {
  FST_DIGEST_CONTENT_TOO_LARGE, FST_DIGEST_INCOMPLETE, FST_DIGEST_INVALID_ENCODING, FST_DIGEST_MISSING,
  FST_DIGEST_TRAILER_UNANNOUNCED, FST_DIGEST_UNREAD_TOO_LARGE, FST_DIGEST_UNSUPPORTED_ENCODING
} from '../../core/errors'
import { BODYLESS_METHODS, collectAlgorithms, hasContent, readClaims, type Claim } from '../../core/claims'
import { contentCoding, createContentDecoders, DECODABLE_CODINGS, DecodingTap } from '../../core/content-decoding'
import { blankFailure, check, fieldList, judge, NO_DIGESTS, PROBLEM_CONTENT_TYPE, type DigestError, type Failure } from '../../core/problem'
import { SourceTap } from '../../core/source-tap'
import type { DigestParams } from '../../core/option-checks'
import type { RouteHookInstaller } from '../route-hooks'
import { kRequestState, kRouteParams, kVerification } from '../symbols'

type ParsingDone = (err: Error | null, stream?: Readable) => void
type PayloadStream = Readable & { receivedEncodedLength?: unknown }

declare module 'fastify' {
  interface FastifyRequest {
    [kRequestState]: BodyCheck | null
    /** request.digestVerification as set (null: worked out when read). */
    [kVerification]: DigestVerification | null
  }
}

// After a body left unread the connection closes; not named on HTTP/2, which forbids connection-specific fields (RFC 9113 §8.2.2).
const CLOSE = Object.freeze({ connection: 'close' })
const closeFor = (request: FastifyRequest): typeof CLOSE | undefined => request.raw.httpVersionMajor === 2 ? undefined : CLOSE

function ignoreError (): void {}

// The stream a preParsing hook hands on (fastify docs/Reference/Hooks.md): each chunk of `origin`, read once this stream is read
// (`started`), is hashed, given to `side` (a decoder; held while it is full) and pushed, `origin` paused while our reader is full.
// At the end `endCheck` chooses the clean end or an error, the parser's to answer with a 4xx (lib/content-type-parser.js rawBody).
export class BodyStream extends Readable {
  hasher: MultiDigester | null
  side: StreamTap | null = null
  endCheck: EndCheck | null = null
  digests: DigestResults | null = null
  /** Past `limit` bytes hashing stops, with `failure` 'too-large': the digests are of a prefix only. */
  limit = Infinity
  failure: 'too-large' | null = null
  started = false

  constructor (readonly origin: PayloadStream, algorithms: Iterable<DigestAlgorithm> | null) {
    super()
    this.hasher = algorithms === null ? null : new MultiDigester(algorithms)
    // A decoder's count, checked against Content-Length and bodyLimit (lib/content-type-parser.js rawBody).
    if (typeof origin.receivedEncodedLength === 'number') Object.defineProperty(this, 'receivedEncodedLength', { get: () => origin.receivedEncodedLength })
    // A reader that stops listening must not turn a late error into an uncaught exception.
    this.on('error', ignoreError)
  }

  override _read (): void {
    if (this.started) {
      if (this.origin.isPaused()) this.origin.resume()
      return
    }
    this.started = true
    const source = this.origin
    // Bound, not closures: the handlers' optimized code outlives each request's listeners (V8 holds it weakly; docs/benchmarks.md).
    const onData = takeChunk.bind(this)
    const onEnd = sourceEnded.bind(this)
    // The source's error or premature end fails this stream.
    const stopWatching = finished(source, { writable: false }, (err) => { if (err) this.destroy(err) })
    this.once('close', () => {
      stopWatching()
      source.removeListener('data', onData).removeListener('end', onEnd)
      // Given up before the end: drained, as node does for an unread body, to keep the connection.
      if (!source.readableEnded) source.resume()
    })
    source.on('data', onData).once('end', onEnd).resume()
  }

  /** At the end of the source and side: `digests` set, then the end check (not once destroyed: a dropped side answers too). */
  settle (): void {
    if (this.destroyed) return
    this.digests ??= this.hasher?.digest() ?? null
    if (this.endCheck === null) this.push(null)
    else this.endCheck((err) => { if (err != null) this.destroy(err); else this.push(null) })
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    this.side?.destroy()
    callback(err)
  }
}

/** A chunk of a BodyStream's source: hashed, given to its side (a full decoder holds it back until it takes more), and pushed. */
function takeChunk (this: BodyStream, chunk: Buffer): void {
  const hasher = this.hasher
  if (hasher !== null && this.failure === null) {
    if (hasher.bytes + chunk.length > this.limit) this.failure = 'too-large'
    else hasher.update(chunk)
  }
  if (this.side?.write(chunk, () => { if (!this.destroyed && this.push(chunk)) this.origin.resume() }) === false) this.origin.pause()
  else if (!this.push(chunk)) this.origin.pause()
}

function sourceEnded (this: BodyStream): void {
  if (this.side === null) this.settle()
  else this.side.end(() => this.settle())
}

/** A request's verification: what it claims, where it is hashed (`limit`: the route's bodyLimit, which caps decoding), and the verdict. */
class BodyCheck {
  /** The first stream: the bytes as received (null: preParsing has not run). */
  head: BodyStream | null = null
  /** The last stream, at whose end the body is checked. */
  stream: BodyStream | null = null
  /** request.raw hashed instead, for a body still unread at preValidation. */
  tap: SourceTap | null = null
  /** preValidation has run: a failure found now errors the stream being read. */
  validated = false
  checked = false
  failure: Failure | null = null
  waitingReply: (() => void) | null = null

  constructor (
    readonly params: DigestParams, readonly claims: Claim[], readonly coding: string | null,
    /** The fields checked over the decoded content (for messages); the algorithms hashed over the bytes received, over the decoded content. */
    readonly decodedFields: string, readonly received: Set<DigestAlgorithm>, readonly decoded: Set<DigestAlgorithm>,
    readonly limit: number, public side: DecodingTap | null
  ) {}
}

/** The failure's status and headers set on `reply`; its body, a Buffer: for a string fastify adds `; charset=utf-8`, which application/problem+json does not define. */
function problemBody (reply: FastifyReply, failure: Failure): Buffer {
  reply.code(failure.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE)
  return Buffer.from(JSON.stringify(failure.problem))
}

const sendProblem = (reply: FastifyReply, failure: Failure): void => { reply.send(problemBody(reply, failure)) }

function readRequest (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, params: DigestParams): void {
  if (BODYLESS_METHODS.has(request.method)) return done()
  const headers = request.headers
  const coding = contentCoding(headers['content-encoding'])
  let claims: Claim[]
  try {
    claims = readClaims(headers, params, coding)
  } catch (err) {
    return sendProblem(reply, blankFailure(params, err as DigestError))
  }
  const received = new Set<DigestAlgorithm>()
  const decoded = new Set<DigestAlgorithm>()
  const decodedFields = collectAlgorithms(received, decoded, claims, headers.trailer, params, coding)
  const required = params.verify === 'required'
  // Nothing to hash: settled now, but a 'required' body of unknown length is counted, and a body that may end in a
  // trailer section (chunked HTTP/1.1, RFC 9112 §7.1.2; any HTTP/2 request, RFC 9113 §8.1) is followed to its end,
  // where a digest trailer nothing hashed is refused (judgeBody).
  const trailersPossible = headers['transfer-encoding'] !== undefined || request.raw.httpVersionMajor === 2
  const nothingHashed = received.size === 0 && decoded.size === 0
  const settled = nothingHashed && !trailersPossible && (!required || headers['content-length'] !== undefined)
  // Values no algorithm can produce are refused before reading anything.
  const unread = check(claims, params, NO_DIGESTS, NO_DIGESTS)
  const failure = judge(claims, unread, params, settled && required && headers['content-length'] !== '0')
  if (failure !== null) return sendProblem(reply, failure)
  if (settled) {
    request[kVerification] = { verified: false, reason: hasContent(headers) ? 'no-digest' : 'no-body', fields: unread }
    return done()
  }
  request[kVerification] = { verified: false, reason: 'unread', fields: [] }
  // Read by an earlier hook of the application's: never verified.
  if (request.raw.readableDidRead) return required ? sendProblem(reply, blankFailure(params, new FST_DIGEST_MISSING())) : done()
  const limit = request.routeOptions.bodyLimit as number
  const decoders = decoded.size > 0 ? createContentDecoders(coding as string) : null
  const side = decoders === null ? null : new DecodingTap(decoders, decoded, limit)
  request[kRequestState] = new BodyCheck(params, claims, coding, decodedFields, received, decoded, limit, side)
  done()
}

/** The instance-level preParsing hook: before the route's (a decoder); also on contexts made before the plugin, without the decorator. */
function hashReceived (request: FastifyRequest, _reply: FastifyReply, payload: PayloadStream, done: ParsingDone): void {
  const state = request[kRequestState]
  if (state == null) return done(null, payload)
  const head = new BodyStream(payload, state.received)
  head.side = state.side
  state.head = state.stream = head
  done(null, head)
}

/** The last route-level preParsing hook: after any decoder. */
function placeStream (request: FastifyRequest, reply: FastifyReply, payload: PayloadStream, done: ParsingDone): void {
  const state = request[kRequestState]
  if (state === null) return done(null, payload)
  const head = state.head as BodyStream
  // A decoder (as @fastify/compress's is) gives us the decoded bytes.
  const decodeHere = state.decoded.size > 0 && payload !== head && typeof payload.receivedEncodedLength === 'number'
  if (decodeHere) {
    head.side?.destroy()
    head.side = state.side = null
  } else if (state.decoded.size > 0 && state.side === null) {
    return sendProblem(reply, undecodable(state))
  }
  let stream = head
  if (payload !== head) {
    // An error does not cross a pipe() (and @fastify/compress rewrites it): the reader's stream is ours again.
    stream = state.stream = new BodyStream(payload, decodeHere ? state.decoded : null)
    if (decodeHere) {
      stream.limit = state.limit
      head.endCheck = onHeadEnd(request, state)
      // Closed before its end (the decoder failed, its reader gave up): nothing verified; a waiting reply gets the failure.
      stream.once('close', () => conclude(request, state, null, state.waitingReply === null
        ? null
        : blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING(state.decodedFields, state.coding))))
    }
  }
  stream.endCheck = checkAtEnd(request, state)
  done(null, stream)
}

/** The 415 of digests of decoded content whose codings nothing decodes, naming those decoded here (RFC 9110 §15.5.16). */
function undecodable (state: BodyCheck): Failure {
  const error = new FST_DIGEST_UNSUPPORTED_ENCODING(state.decodedFields, state.coding)
  return blankFailure(state.params, error, { 'accept-encoding': DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ') })
}

/** Unread, and nothing between request.raw and the parser (or no preParsing): a reader may take request.raw. */
function unreadRaw (request: FastifyRequest, state: BodyCheck): boolean {
  const head = state.head
  return state.tap === null && (head === null || (state.stream === head && head.origin === request.raw && !head.started))
}

/** Hashes the unread body at request.raw from now on, whoever reads it; the stream only carries it. */
function tapRaw (request: FastifyRequest, state: BodyCheck): SourceTap {
  if (state.head !== null) state.head.hasher = state.head.side = null
  const tap = state.tap = new SourceTap(request.raw, state.received, state.side, checkAtEnd(request, state))
  tap.checkEnded()
  return tap
}

function bytesOf (state: BodyCheck): number {
  return (state.tap?.hasher ?? state.head?.hasher as MultiDigester).bytes
}

/** The digests of the decoded content. Throws why there are none. */
function decodedDigests (state: BodyCheck): DigestResults {
  if (state.decoded.size === 0) return NO_DIGESTS
  if (bytesOf(state) === 0) return digestAll(state.decoded, Buffer.alloc(0))
  const decoder = state.side ?? state.stream as BodyStream
  if (decoder.failure === 'too-large') throw new FST_DIGEST_CONTENT_TOO_LARGE(state.decodedFields, String(state.limit))
  if (decoder.failure === 'invalid') throw new FST_DIGEST_INVALID_ENCODING(state.decodedFields, state.coding)
  return decoder.digests as DigestResults
}

const NO_CLAIMS: Claim[] = []

// A trailer digest in an enabled algorithm that nothing hashed (its field not announced in the Trailer field, RFC 9110
// §6.6.2, and not named in the header section) cannot be checked: refused, never passed as unchecked.
function refuseUnhashed (claims: readonly Claim[], state: BodyCheck): void {
  const unhashed = claims.filter((claim) => state.params.algorithms.some((algorithm) =>
    claim.received.has(algorithm) && !(claim.decoded ? state.decoded : state.received).has(algorithm)))
  if (unhashed.length === 0) return
  const names = fieldList(unhashed.map((claim) => claim.field))
  throw new FST_DIGEST_TRAILER_UNANNOUNCED(names, names)
}

/** The failure of the whole body, or null; sets request.digestVerification. */
function judgeBody (request: FastifyRequest, state: BodyCheck): Failure | null {
  const { params } = state
  const bytes = bytesOf(state)
  const head = state.head as BodyStream
  // A head that a foreign preParsing stream never read to its end: the digests of what it hashed.
  if (state.tap === null && head.digests === null) head.digests = (head.hasher as MultiDigester).digest()
  const received = (state.tap ?? head).digests as DigestResults
  let fields: FieldVerification[] = []
  let failure: Failure | null
  try {
    if (state.tap?.failure === 'too-large') {
      const names = fieldList(state.claims.map((c) => c.field)) || 'Content-Digest'
      throw Object.assign(new FST_DIGEST_UNREAD_TOO_LARGE(names, String(state.limit)), { headers: closeFor(request) })
    }
    const decoded = decodedDigests(state)
    // Digests in the trailer section count too (RFC 9110 §6.5).
    const trailers = request.raw.trailers as Record<string, string> | undefined
    const trailerClaims = trailers === undefined ? NO_CLAIMS : readClaims(trailers, params, state.coding)
    refuseUnhashed(trailerClaims, state)
    const claims = trailerClaims.length === 0 ? state.claims : state.claims.concat(trailerClaims)
    fields = check(claims, params, received, decoded)
    // Under 'required' an empty body needs no digest.
    failure = judge(claims, fields, params, params.verify === 'required' && bytes > 0)
  } catch (err) {
    failure = blankFailure(params, err as DigestError, (err as DigestError).headers)
  }
  if (failure !== null) request[kVerification] = { verified: false, reason: 'failed', fields }
  else if (fields.some((f) => f.ok)) request[kVerification] = { verified: true, fields }
  else request[kVerification] = { verified: false, reason: bytes === 0 ? 'no-body' : 'no-digest', fields }
  return failure
}

// Records the verdict once: the body judged, or (`failed` given) nothing verified, `failed` (null: none) answering a waiting
// reply. `release` ends the stream, or fails it after preValidation; then a waiting reply goes on.
function conclude (request: FastifyRequest, state: BodyCheck, release: Parameters<EndCheck>[0] | null, failed?: Failure | null): void {
  if (state.checked) return release?.()
  state.checked = true
  if (failed === undefined) failed = judgeBody(request, state)
  else request[kVerification] = { verified: false, reason: 'failed', fields: [] }
  state.failure = failed
  release?.(failed !== null && state.validated ? failed : null)
  state.waitingReply?.()
}

/** The end check; closures stored on streams come from factories: V8 pretenures one made where it is assigned (docs/benchmarks.md). */
function checkAtEnd (request: FastifyRequest, state: BodyCheck): EndCheck {
  return (release) => conclude(request, state, release)
}

/** Empty content needs no decoding (every digest is of the empty string): judged at the end of the bytes received. */
function onHeadEnd (request: FastifyRequest, state: BodyCheck): EndCheck {
  return (callback) => {
    if (bytesOf(state) > 0) return callback()
    conclude(request, state, (err) => {
      callback()
      if (err != null) (state.stream as BodyStream).destroy(err)
    })
  }
}

function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const state = request[kRequestState]
  if (state === null) return done()
  if (!state.checked && unreadRaw(request, state)) tapRaw(request, state)
  state.validated = true
  // No Content-Type nor length fields: fastify runs the handler at once (lib/handle-request.js:55-65),
  // whatever arrives; an empty body is judged first, content left to its reader.
  const headers = request.headers
  if (state.checked || headers['content-type'] !== undefined || hasContent(headers)) return answerValidation(reply, state, done)
  const wake = (): void => answerValidation(reply, state, done)
  if (state.tap !== null) {
    state.tap.wake = wake
    request.raw.read(0)
  } else {
    (state.stream as BodyStream).once('close', wake).resume()
  }
}

function answerValidation (reply: FastifyReply, state: BodyCheck, done: HookHandlerDoneFunction): void {
  if (state.failure === null) return done()
  sendProblem(reply, state.failure)
}

/** Whether `payload` is fastify's default error body (lib/error-handler.js), e.g. for a digest error a handler rethrew. */
function isDefaultErrorBody (payload: unknown, statusCode: number): boolean {
  if (typeof payload !== 'string') return false
  try {
    const body = JSON.parse(payload) as { statusCode?: unknown, error?: unknown, message?: unknown }
    return body.statusCode === statusCode && typeof body.error === 'string' && typeof body.message === 'string'
  } catch {
    return false
  }
}

// The first route-level onSend hook: a failure replaces any answer but an error's (ours included);
// a success waits while the rest is read and checked, but a stream (the body may feed it) does not.
function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes): void {
  const state = request[kRequestState]
  if (state === null) return done(null, payload)
  if (state.checked) {
    if (state.failure === null || (reply.statusCode >= 400 && !isDefaultErrorBody(payload, reply.statusCode))) return done(null, payload)
    if (isNodeStream(payload)) (payload as Readable).destroy()
    return done(null, problemBody(reply.removeHeader('content-length'), state.failure))
  }
  if (reply.statusCode >= 400) state.tap?.stop()
  if (reply.statusCode >= 400 || isNodeStream(payload)) return done(null, payload)
  if (state.head === null && state.decoded.size > 0 && state.side === null) {
    // Answered before preParsing, which never runs now: nothing decodes these codings.
    conclude(request, state, null, undecodable(state))
    return onSend(request, reply, payload, done)
  }
  state.validated = true
  state.waitingReply = () => onSend(request, reply, payload, done)
  // The rest cannot be checked: the waiting reply gets the failure, and the connection closes.
  const cutOff = (): void => conclude(request, state, null, blankFailure(state.params, new FST_DIGEST_INCOMPLETE(), closeFor(request)))
  if (state.tap === null && !unreadRaw(request, state)) {
    // The streams hash it: the last one is read to its end.
    const last = state.stream as BodyStream
    if (last.destroyed) return cutOff()
    last.once('close', cutOff).resume()
    return
  }
  const tap = state.tap ?? tapRaw(request, state)
  tap.allowance = state.limit
  tap.cutOff = cutOff
  state.stream?.resume()
  if (request.raw.readableFlowing !== true) request.raw.resume()
}

const isErrorStatus = (status: unknown): boolean => typeof status === 'number' && status >= 400 && status <= 599

// The last route-level onError hook (fastify lib/reply.js onErrorHook): an error without a status thrown for a failed or cut body
// (@fastify/multipart's bare ERR_STREAM_PREMATURE_CLOSE) takes the failure's 4xx, or 400 for a cut upload (lib/error-status.js).
function onError (request: FastifyRequest, reply: FastifyReply, error: Error & { statusCode?: unknown, status?: unknown }, done: () => void): void {
  const state = request[kRequestState]
  if (state !== null && !isErrorStatus(error.statusCode) && !isErrorStatus(error.status)) {
    if (state.failure !== null) reply.code(state.failure.statusCode)
    else if (request.raw.readableAborted) reply.code(400)
  }
  done()
}

/** request.digestVerification where the verifier never runs, worked out when read: no digests, `verify: false`, bodyless methods. */
function defaultVerification (request: FastifyRequest): DigestVerification | null {
  const params = (request.routeOptions.config as { [kRouteParams]?: DigestParams } | undefined)?.[kRouteParams]
  if (params === undefined) return null
  if (params.verify === false) return { verified: false, reason: 'disabled', fields: [] }
  if (!BODYLESS_METHODS.has(request.method)) return null
  return { verified: false, reason: hasContent(request.headers) ? 'unread' : 'no-body', fields: [] }
}

export function installRequestVerification (fastify: FastifyInstance): RouteHookInstaller<DigestParams> {
  fastify.decorateRequest(kRequestState, null)
  fastify.decorateRequest(kVerification, null)
  fastify.decorateRequest('digestVerification', {
    getter (this: FastifyRequest) { return this[kVerification] ?? (this[kVerification] = defaultVerification(this)) },
    setter (this: FastifyRequest, value: DigestVerification | null) { this[kVerification] = value }
  })
  fastify.addHook('preParsing', hashReceived)
  return {
    onRoute (routeOptions, params) {
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (params.verify === false || methods.every((m) => BODYLESS_METHODS.has(m.toUpperCase()))) return null
      function digestVerifyRequest (this: unknown, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
        readRequest(request, reply, done, params)
      }
      return {
        onRequestFirst: digestVerifyRequest,
        preParsingLast: placeStream,
        preValidationFirst: onPreValidation,
        onSendFirst: onSend,
        onErrorLast: onError
      }
    }
  }
}
