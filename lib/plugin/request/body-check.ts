// Request verification, hook by hook (docs/design.md, "Request verification").
// * onRequest (first of the route's): reads the claims and refuses what can
//   be refused unread. A coded request is tapped at request.raw at once
//   (source-tap.ts): a decoder may read it before the route's preParsing.
// * preParsing (last of the route's): hands on a BodyStream that hashes what
//   the parser reads and checks it at its end; after a decoder it hashes the
//   decoded bytes, or carries the failure to the reader.
// * preValidation (first): a parsed body has been checked: a failure is
//   answered here. A body still unread is left to whoever reads it
//   (request.raw, @fastify/multipart, a stream-passing parser): request.raw
//   is tapped now, and a failure errors the stream being read.
// * onSend (first): a success for a body not yet checked waits for its
//   check; a failed body's answer is its problem details.
// * onError (last): a bare error thrown for a failed or cut body is a 4xx.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import type { DigestAlgorithm, DigestVerification, FieldVerification } from '../../../types/index'
import { digestAll, type DigestResults } from '../../core/digest-stream'
import {
  FST_DIGEST_CONTENT_TOO_LARGE, FST_DIGEST_INCOMPLETE, FST_DIGEST_INVALID_ENCODING, FST_DIGEST_MISSING,
  FST_DIGEST_UNREAD_TOO_LARGE, FST_DIGEST_UNSUPPORTED_ENCODING
} from '../../core/errors'
import { announcedTrailers, BODYLESS_METHODS, collectAlgorithms, hasContent, parsesNothing, readClaims, type Claim } from '../../core/claims'
import { contentCoding, createContentDecoders, DECODABLE_CODINGS, DecodingTap } from '../../core/content-decoding'
import { blankFailure, check, fieldList, judge, summarize, NO_DIGESTS, type DigestError, type Failure } from '../../core/judgement'
import { PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { SourceTap } from '../../core/source-tap'
import type { DigestParams } from '../options'
import { kRequestState, kVerification } from '../symbols'
import { BodyStream } from './body-stream'

type HookDone = (err?: Error) => void
type SendDone = (err: Error | null, payload?: unknown) => void
type Release = (err?: Error | null) => void

declare module 'fastify' {
  interface FastifyRequest {
    /** Request verification's state (null: nothing is checked). */
    [kRequestState]: BodyCheck | null
  }
}

export interface BodyCheck {
  params: DigestParams
  claims: Claim[]
  /** The content codings as contentCoding() gives them (null: none). */
  coding: string | null
  /** The fields checked over the decoded content, for error messages. */
  decodedFields: string
  received: DigestAlgorithm[]
  decoded: DigestAlgorithm[]
  /** The route's bodyLimit, which caps decoding. */
  limit: number
  /** Bytes were read before the verifier saw them: never verified. */
  partial: boolean
  /** Hashes at request.raw (null: the BodyStream hashes). */
  tap: SourceTap | null
  stream: BodyStream | null
  /** The stream hashes the decoded bytes (after a decoder). */
  decodeHere: boolean
  side: DecodingTap | null
  /** The route's preParsing hooks have run, or never will. */
  routed: boolean
  /** preValidation has run: a failure found now errors the stream being read. */
  validated: boolean
  /** The verdict is in `failure`. */
  checked: boolean
  /** The problem details have been sent. */
  answered: boolean
  failure: Failure | null
  /** request.raw's end, held until the route's preParsing hooks have run. */
  heldEnd: Release | null
  waitingReply: (() => void) | null
}

export function setVerification (request: FastifyRequest, verification: DigestVerification): void {
  request[kVerification] = verification
}

/** Sends `failure` as the answer. */
function sendProblem (reply: FastifyReply, failure: Failure): void {
  // A Buffer: fastify would append `; charset=utf-8` to a JSON type for a
  // string, and application/problem+json defines no charset parameter.
  reply.code(failure.error.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE)
    .send(Buffer.from(JSON.stringify(failure.problem)))
}

/** The first route-level onRequest hook. */
export function readRequest (request: FastifyRequest, reply: FastifyReply, done: HookDone, params: DigestParams): void {
  // Nothing to check (request.digestVerification says why when read).
  if (BODYLESS_METHODS.has(request.method)) return done()
  const headers = request.headers
  const coding = contentCoding(headers['content-encoding'])
  let claims: Claim[]
  try {
    claims = readClaims(headers, params, coding)
  } catch (err) {
    return sendProblem(reply, blankFailure(params, err as DigestError))
  }
  // Values no algorithm can produce are refused before reading anything.
  const invalid = judge(check(claims, params, NO_DIGESTS, NO_DIGESTS), params, false)
  if (invalid !== null) return sendProblem(reply, invalid)

  const received = new Set<DigestAlgorithm>()
  const decoded = new Set<DigestAlgorithm>()
  const decodedFields = collectAlgorithms(received, decoded, claims, announcedTrailers(headers.trailer, params), params, coding)
  if (received.size === 0 && decoded.size === 0) {
    const required = params.verify === 'required'
    // Only a Content-Length says up front whether there is content (HTTP/2
    // and chunked requests have none): a body of unknown length is counted.
    const empty = headers['content-length'] === '0'
    if (!required || empty || headers['content-length'] !== undefined) {
      const checked = check(claims, params, NO_DIGESTS, NO_DIGESTS)
      const failure = judge(checked, params, required && !empty)
      if (failure !== null) return sendProblem(reply, failure)
      setVerification(request, { verified: false, reason: hasContent(headers) ? 'no-digest' : 'no-body', fields: checked.map((c) => c.verification) })
      return done()
    }
  }
  const limit = request.routeOptions.bodyLimit as number
  const state: BodyCheck = {
    params,
    claims,
    coding,
    decodedFields,
    received: [...received],
    decoded: [...decoded],
    limit,
    // Read by an earlier hook of the application's: not all bytes are seen.
    partial: request.raw.readableDidRead,
    tap: null,
    stream: null,
    decodeHere: false,
    side: null,
    routed: false,
    validated: false,
    checked: false,
    answered: false,
    failure: null,
    heldEnd: null,
    waitingReply: null
  }
  request[kRequestState] = state
  setVerification(request, { verified: false, reason: 'unread', fields: [] })
  if (coding !== null) {
    // A decoder may read request.raw before the route's preParsing hook:
    // hashed at the source from now on, decoded on the side for the
    // digests of the decoded content.
    const decoders = decoded.size > 0 ? createContentDecoders(coding) : null
    if (decoders !== null) state.side = new DecodingTap(decoders, decoded, limit)
    tapRaw(request, state)
  }
  done()
}

function tapRaw (request: FastifyRequest, state: BodyCheck): SourceTap {
  const tap = new SourceTap(request.raw, state.partial ? [] : state.received, state.side, onRawEnd(request, state))
  state.tap = tap
  // A body that had fully arrived before the tap: checked now, before any reader.
  tap.checkEnded()
  return tap
}

type PayloadStream = Readable & { receivedEncodedLength?: unknown }

/** The last route-level preParsing hook: after any decoder. */
export function placeStream (request: FastifyRequest, reply: FastifyReply, payload: PayloadStream, done: (err: Error | null, stream?: Readable) => void): void {
  const state = request[kRequestState]
  if (state === null) return done(null, payload)
  state.routed = true
  const tap = state.tap
  if (tap === null) {
    // Hashed where the parser reads it.
    state.stream = new BodyStream(payload, state.partial ? [] : state.received, Infinity)
    state.stream.endCheck = onStreamEnd(request, state)
    return done(null, state.stream)
  }
  // A stream that reports receivedEncodedLength is a decoder (as
  // @fastify/compress's is): it gives us the decoded bytes.
  const decodedUpstream = typeof payload.receivedEncodedLength === 'number'
  if (state.decoded.length > 0) {
    if (decodedUpstream) {
      tap.untapSide()
      state.side = null
      state.decodeHere = true
    } else if (state.side === null) {
      tap.stop()
      state.answered = true
      return sendProblem(reply, undecodable(state))
    }
  }
  if (payload !== request.raw) {
    // Something stands between request.raw and the parser: an error of
    // request.raw does not cross a pipe(), and @fastify/compress rewrites
    // it, so a failure is raised on this stream, where the reader sees it.
    const stream = new BodyStream(payload, state.decodeHere ? state.decoded : null, state.limit)
    if (state.decodeHere) {
      stream.endCheck = onStreamEnd(request, state)
      stream.once('close', onStreamClose(request, state))
    }
    state.stream = stream
    payload = stream
  }
  releaseHeldEnd(request, state)
  done(null, payload)
}

/**
 * The 415 of digests of the decoded content whose codings nothing decodes
 * for the route, naming the codings decoded here (RFC 9110 §15.5.16).
 */
function undecodable (state: BodyCheck): Failure {
  const error = new FST_DIGEST_UNSUPPORTED_ENCODING(state.decodedFields, state.coding)
  return blankFailure(state.params, error, { 'accept-encoding': DECODABLE_CODINGS.filter((c) => c !== 'x-gzip').join(', ') })
}

function releaseHeldEnd (request: FastifyRequest, state: BodyCheck): void {
  const held = state.heldEnd
  state.heldEnd = null
  if (held !== null) rawEnded(request, state, held)
}

/** The bytes received so far. */
function bytesOf (state: BodyCheck): number {
  return state.tap?.bytes ?? (state.stream?.hasher?.bytes as number)
}

/** The digests of the decoded content, or why there are none. */
function decodedDigests (state: BodyCheck): DigestResults | Failure {
  if (state.decoded.length === 0) return NO_DIGESTS
  if (bytesOf(state) === 0) return digestAll(state.decoded, Buffer.alloc(0))
  const side = state.side
  const failure = side !== null ? side.failure : (state.stream as BodyStream).overLimit ? 'too-large' : null
  if (failure === 'too-large') return blankFailure(state.params, new FST_DIGEST_CONTENT_TOO_LARGE(state.decodedFields, String(state.limit)))
  if (failure === 'invalid') return blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING(state.decodedFields, state.coding))
  return (side !== null ? side.digests : ((state.stream as BodyStream).hasher as { digest: () => DigestResults }).digest()) as DigestResults
}

/** The failure of the whole body, or null; sets request.digestVerification. */
function judgeBody (request: FastifyRequest, state: BodyCheck): Failure | null {
  const { params } = state
  if (state.partial) {
    setVerification(request, { verified: false, reason: 'unread', fields: [] })
    return params.verify === 'required' ? blankFailure(params, new FST_DIGEST_MISSING()) : null
  }
  const receivedDigests = state.tap !== null ? state.tap.digests as DigestResults : (state.stream?.hasher as { digest: () => DigestResults }).digest()
  const bytes = bytesOf(state)
  const decoded = decodedDigests(state)
  let fields: FieldVerification[] = []
  let failure: Failure | null
  if (decoded instanceof Map) {
    try {
      // Digests in the trailer section count too (RFC 9110 §6.5).
      const trailers = request.raw.trailers as Record<string, string> | undefined
      const claims = trailers === undefined ? state.claims : state.claims.concat(readClaims(trailers, params, state.coding))
      const checked = check(claims, params, receivedDigests, decoded)
      fields = checked.map((c) => c.verification)
      // Under 'required' an empty body needs no digest.
      failure = judge(checked, params, params.verify === 'required' && bytes > 0)
    } catch (err) {
      failure = blankFailure(params, err as DigestError)
    }
  } else {
    failure = decoded
  }
  setVerification(request, failure === null
    ? summarize(fields, bytes === 0 ? 'no-body' : 'no-digest')
    : { verified: false, reason: 'failed', fields })
  return failure
}

/** Records the verdict; `release` (if any) ends or fails the stream; then a reply waiting for it is woken. */
function conclude (state: BodyCheck, failure: Failure | null, release?: () => void): void {
  state.checked = true
  state.failure = failure
  const waiting = state.waitingReply
  state.waitingReply = null
  release?.()
  waiting?.()
}

/**
 * The final check. Before preValidation (a parser reads) the stream ends
 * cleanly and preValidation answers a failure; after it (a handler reads)
 * `release` gets the error.
 */
function finalCheck (request: FastifyRequest, state: BodyCheck, release: Release): void {
  if (state.checked) return release()
  const failure = judgeBody(request, state)
  conclude(state, failure, () => release(failure !== null && state.validated ? failure.error : null))
}

/** The end of request.raw as tapped. */
function rawEnded (request: FastifyRequest, state: BodyCheck, release: Release): void {
  // Whether a stream that hashes the decoded bytes follows is known once
  // the route's preParsing hooks have run.
  if (!state.routed) {
    state.heldEnd = release
    return
  }
  const stream = state.stream
  // No stream after a decoder: a failure is raised on request.raw.
  if (stream === null || state.coding === null) return finalCheck(request, state, release)
  if (state.decodeHere && state.tap?.bytes !== 0) return release()
  // request.raw ends cleanly, so that the streams after it end too; a
  // failure reaches the reader through the last one.
  finalCheck(request, state, (err) => {
    release()
    if (err != null) stream.destroy(err)
  })
}

// The end callbacks are made by these small functions, not as closures
// inside the hooks: V8 allocates a function literal assigned straight to a
// property in the old generation, with the request it holds (see
// source-tap.ts).
function onRawEnd (request: FastifyRequest, state: BodyCheck): (release: Release) => void {
  return (release) => rawEnded(request, state, release)
}

function onStreamEnd (request: FastifyRequest, state: BodyCheck): (callback: Release) => void {
  return (callback) => finalCheck(request, state, callback)
}

/**
 * The decoded stream closed before its end (the decoder failed, or its
 * reader gave up): nothing was verified, and a reply waiting for the check
 * gets the failure.
 */
function onStreamClose (request: FastifyRequest, state: BodyCheck): () => void {
  return () => {
    if (state.checked) return
    setVerification(request, { verified: false, reason: 'failed', fields: [] })
    conclude(state, state.waitingReply === null ? null : blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING(state.decodedFields, state.coding)))
  }
}

/** The first route-level preValidation hook. */
export function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
  const state = request[kRequestState]
  if (state === null) return done()
  state.validated = true
  if (state.checked) return answerValidation(reply, state, done)
  if (state.tap === null && state.stream?.origin === request.raw && !state.stream.started) {
    // Unread so far: the handler reads it, through request.raw or the
    // stream. Hashed at request.raw, whoever reads it.
    if (state.stream !== null) state.stream.hasher = null
    tapRaw(request, state)
    if (state.checked) return answerValidation(reply, state, done)
  }
  if (state.tap !== null && parsesNothing(request.headers)) {
    // fastify runs the handler at once for a request it takes to have no
    // body (lib/handle-request.js:55-65), whatever arrives over HTTP/2 or
    // from a Readable injected: an empty body is judged before the handler.
    state.tap.awaitData(() => answerValidation(reply, state, done))
    request.raw.read(0)
    return
  }
  done()
}

function answerValidation (reply: FastifyReply, state: BodyCheck, done: HookDone): void {
  if (state.failure === null) return done()
  state.answered = true
  sendProblem(reply, state.failure)
}

/**
 * Whether `payload` is fastify's default error body (its default error
 * handler's serialization: statusCode, code, error, message), e.g. for the
 * digest error a handler rethrew.
 */
function isDefaultErrorBody (payload: unknown, statusCode: number): boolean {
  if (typeof payload !== 'string') return false
  try {
    const body = JSON.parse(payload) as { statusCode?: unknown, error?: unknown, message?: unknown }
    return body.statusCode === statusCode && typeof body.error === 'string' && typeof body.message === 'string'
  } catch {
    return false
  }
}

function isStream (payload: unknown): payload is Readable {
  return typeof (Object(payload) as Partial<Readable>).pipe === 'function'
}

function sendWhenChecked (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: SendDone): () => void {
  return () => onSend(request, reply, payload, done)
}

/** The rest of the body cannot be checked: the waiting reply gets `error`'s failure. */
function abandon (request: FastifyRequest, state: BodyCheck, error: DigestError): void {
  if (state.checked) return
  setVerification(request, { verified: false, reason: 'failed', fields: [] })
  conclude(state, blankFailure(state.params, error, { connection: 'close' }))
}

/** The first route-level onSend hook (before the response digests). */
export function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: SendDone): void {
  const state = request[kRequestState]
  if (state === null || state.answered) return done(null, payload)
  const failure = state.failure
  if (state.checked) {
    if (failure === null || (reply.statusCode >= 400 && !isDefaultErrorBody(payload, reply.statusCode))) {
      // Passed, or an error handler of the application's answered.
      return done(null, payload)
    }
    state.answered = true
    // Whatever the handler meant to send, the answer is the problem.
    if (isStream(payload)) payload.destroy()
    reply.code(failure.error.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE).removeHeader('content-length')
    return done(null, JSON.stringify(failure.problem))
  }
  if (reply.statusCode >= 400 || isStream(payload)) {
    // An error answer claims nothing about the body. A stream may be fed by
    // the body itself (an echo): it cannot wait for the end.
    if (reply.statusCode >= 400) state.tap?.stop()
    return done(null, payload)
  }
  if (!state.routed) {
    // Answered before the route's preParsing hooks ran: they never will.
    state.routed = true
    if (state.decoded.length > 0 && state.side === null) {
      state.tap?.stop()
      setVerification(request, { verified: false, reason: 'failed', fields: [] })
      conclude(state, undecodable(state))
      return onSend(request, reply, payload, done)
    }
    releaseHeldEnd(request, state)
    if (state.checked) return onSend(request, reply, payload, done)
  }
  // Read the rest (within the route's bodyLimit) and check it before the
  // answer goes out: never a success for a body that was not checked.
  state.validated = true
  state.waitingReply = sendWhenChecked(request, reply, payload, done)
  const stream = state.stream
  const cutOff = (): void => abandon(request, state, new FST_DIGEST_INCOMPLETE())
  if (state.tap === null && stream?.started === true) {
    // Hashed by the stream its reader started on: it reads on to the end;
    // closed before it, nothing more can be checked.
    if (stream.destroyed) return cutOff()
    stream.once('close', cutOff)
    stream.resume()
    return
  }
  const tap = state.tap ?? tapRaw(request, state)
  if (state.checked) return
  tap.limitRest(state.limit, () => {
    abandon(request, state, new FST_DIGEST_UNREAD_TOO_LARGE(fieldList(state.claims.map((c) => c.field)) || 'Content-Digest', String(state.limit)))
  }, cutOff)
  stream?.resume()
  if (request.raw.readableFlowing !== true) request.raw.resume()
}

const isErrorStatus = (status: unknown): boolean => typeof status === 'number' && status >= 400 && status <= 599

/**
 * The last route-level onError hook (before the error handler, fastify
 * lib/reply.js onErrorHook). An error without a status of its own, thrown
 * after the body failed or was cut off (@fastify/multipart destroys its
 * file stream with a bare ERR_STREAM_PREMATURE_CLOSE), takes the failure's
 * 4xx, or 400 for a cut upload, so that fastify's default error handler
 * does not answer or log a client's bad body as a 500 (it keeps a status
 * already set, lib/error-status.js).
 */
export function onError (request: FastifyRequest, reply: FastifyReply, error: Error & { statusCode?: unknown, status?: unknown }, done: () => void): void {
  const state = request[kRequestState]
  if (state !== null && !isErrorStatus(error.statusCode) && !isErrorStatus(error.status)) {
    if (state.failure !== null) reply.code(state.failure.error.statusCode)
    else if (request.raw.readableAborted) reply.code(400)
  }
  done()
}
