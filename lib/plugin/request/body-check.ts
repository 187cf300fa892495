// Request verification: request.digestVerification and the route's hooks, each moving the request's Verification
// through its phases (verification-state.ts; docs/architecture.md, "The Fastify lifecycle, mapped to files";
// docs/design.md, "Request verification").
import type {
  DoneFuncWithErrOrRes, FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction
} from 'fastify'
import type { Readable } from 'node:stream'
import type { DigestVerification, FieldVerification } from '../../../types/index'
import { BodyStream, type PayloadStream } from '../../core/body-stream'
import { ChunkKeeper } from '../../core/chunk-keeper'
import {
  anyWrongLength, BODYLESS_METHODS, collectAlgorithms, hasContent, readClaims, type Claim
} from '../../core/claims'
import { contentCoding, decodingOrder } from '../../core/content-decoding'
import { isNodeStream } from '../../core/digest-stream'
import { FST_DIGEST_INCOMPLETE, FST_DIGEST_INVALID_ENCODING, FST_DIGEST_MISSING } from '../../core/errors'
import { blankFailure, check, judge as judgeClaims, NO_DIGESTS, type DigestError } from '../../core/problem'
import { SourceTap } from '../../core/source-tap'
import type { DigestParams } from '../../core/option-checks'
import type { RouteHookInstaller } from '../route-hooks'
import { kRequestState, kRouteParams, kVerification } from '../symbols'
import { answerJudged, onError, sendProblem } from './answers'
import { abandon, checkAtEnd, closeFor, judge, onHeadEnd, undecodable } from './verdict'
import { unreadRaw, Verification } from './verification-state'

type ParsingDone = (err: Error | null, stream?: Readable) => void

/** A body of at most this many bytes (its Content-Length) is kept at request.raw, hashed once (chunk-keeper.ts). */
const KEEP_BYTES = 64 * 1024

/** A kept coded body is decoded whole only under a bodyLimit of at most fastify's default (1 MiB, fastify.js:921). */
const DECODE_WHOLE_BYTES = 1024 * 1024

/** A request whose verdict is known before its body: none of its claims can be checked (`fields`), or it has none. */
function settle (request: FastifyRequest, fields: FieldVerification[], done: HookHandlerDoneFunction): void {
  const reason = hasContent(request.headers) ? 'no-digest' : 'no-body'
  request[kVerification] = { verified: false, reason, fields }
  done()
}

/** The route's first onRequest hook: the claims, what is refused before reading, the state of a body followed. */
function readRequest (
  request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, params: DigestParams, limit: number
): void {
  if (BODYLESS_METHODS.has(request.method)) return done()
  const headers = request.headers
  const coding = contentCoding(headers['content-encoding'])
  let claims: Claim[]
  try {
    claims = readClaims(headers, params, coding)
  } catch (err) {
    return sendProblem(reply, blankFailure(params, err as DigestError))
  }
  const required = params.verify === 'required'
  // Nothing to hash: settled now, but a 'required' body of unknown length is counted, and a body that may end in a
  // trailer section (chunked HTTP/1.1, RFC 9112 §7.1.2; any HTTP/2 request, RFC 9113 §8.1) is followed to its end,
  // where a digest trailer nothing hashed is refused (verdict.ts).
  const trailersPossible = headers['transfer-encoding'] !== undefined || request.raw.httpVersionMajor === 2
  if (claims.length === 0 && !trailersPossible && !required) return settle(request, [], done)
  const wanted = collectAlgorithms(claims, headers.trailer, params, coding)
  const { received, decoded } = wanted
  const nothingHashed = received.size === 0 && decoded.size === 0
  const settled = nothingHashed && !trailersPossible && (!required || headers['content-length'] !== undefined)
  // Values no algorithm can produce are refused before reading anything; a settled request is judged now.
  if (settled || anyWrongLength(claims, params)) {
    const unread = check(claims, params, NO_DIGESTS, NO_DIGESTS)
    const failure = judgeClaims(claims, unread, params, settled && required && headers['content-length'] !== '0')
    if (failure !== null) return sendProblem(reply, failure)
    return settle(request, unread, done)
  }
  // Read by an earlier hook of the application's: never verified.
  if (request.raw.readableDidRead) {
    if (required) return sendProblem(reply, blankFailure(params, new FST_DIGEST_MISSING()))
    request[kVerification] = unreadVerification()
    return done()
  }
  // Until judged, request.digestVerification reads 'unread' (its getter).
  placeHashing(request, request[kRequestState] = new Verification(params, claims, coding, wanted, limit))
  done()
}

// Where the body is hashed: a small body is kept at request.raw (chunk-keeper.ts) if nothing is buffered yet (pushed
// from now on, every byte is kept); else by the streams preParsing places and a side decoder. A coded body is kept
// only where bodyLimit bounds its decoding whole at the end (verdict.ts), synchronous, as it bounds fastify's own
// parsing of a body.
function placeHashing (request: FastifyRequest, state: Verification): void {
  const { limit, wanted: { decoded } } = state
  const length = Number(request.headers['content-length'])
  const small = length > 0 && length <= KEEP_BYTES && length <= limit
  const order = decoded.size === 0 || limit > DECODE_WHOLE_BYTES ? null : decodingOrder(state.coding as string)
  if (small && (decoded.size === 0 || order !== null) && request.raw.readableLength === 0) {
    state.keeper = new ChunkKeeper(request.raw, length)
  } else {
    state.openSide()
  }
}

/**
 * The instance-level preParsing hook: before the route's (a decoder); also on contexts made before the plugin, without
 * the decorator.
 */
function hashReceived (request: FastifyRequest, _reply: FastifyReply, payload: PayloadStream, done: ParsingDone): void {
  const state = request[kRequestState]
  if (state == null) return done(null, payload)
  state.phase = 'parsing'
  if (state.keeper !== null) {
    if (payload === request.raw) return done(null, payload)
    // Another plugin's stream, registered before this one, stands between: the bytes it gives are hashed, as received.
    state.keeper.release()
    state.keeper = null
    state.openSide()
  }
  const head = new BodyStream(payload, state.wanted.received)
  head.side = state.side
  state.head = state.last = head
  done(null, head)
}

/**
 * A decoder's stream closed before its end (the decoder failed, its reader gave up): nothing verified; a waiting reply
 * gets the failure.
 */
function closedEarly (request: FastifyRequest, state: Verification): () => void {
  return () => abandon(request, state, state.onJudged === null
    ? null
    : blankFailure(state.params, new FST_DIGEST_INVALID_ENCODING(state.wanted.decodedFields, state.coding)))
}

/** The stream the parser reads when another stands between request.raw and it, a kept body: judged at its end. */
function behindKept (request: FastifyRequest, state: Verification, payload: PayloadStream): BodyStream {
  const last = state.last = new BodyStream(payload, null)
  last.endCheck = checkAtEnd(request, state)
  const decoder = typeof payload.receivedEncodedLength === 'number'
  if (state.wanted.decoded.size > 0 && decoder) last.once('close', closedEarly(request, state))
  return last
}

/** The last route-level preParsing hook: after any decoder. */
function placeStream (request: FastifyRequest, reply: FastifyReply, payload: PayloadStream, done: ParsingDone): void {
  const state = request[kRequestState]
  if (state === null) return done(null, payload)
  if (state.keeper !== null) return done(null, payload === request.raw ? payload : behindKept(request, state, payload))
  const head = state.head as BodyStream
  const decoded = state.wanted.decoded
  // A decoder (as @fastify/compress's is) gives us the decoded bytes.
  const decodeHere = decoded.size > 0 && payload !== head && typeof payload.receivedEncodedLength === 'number'
  if (decodeHere) {
    head.side?.destroy()
    head.side = state.side = null
  } else if (decoded.size > 0 && state.side === null) {
    return sendProblem(reply, undecodable(state))
  }
  let last = head
  if (payload !== head) {
    // An error does not cross a pipe() (and @fastify/compress rewrites it): the reader's stream is ours again.
    last = state.last = new BodyStream(payload, decodeHere ? decoded : null)
    if (decodeHere) {
      last.limit = state.limit
      head.endCheck = onHeadEnd(request, state)
      last.once('close', closedEarly(request, state))
    }
  }
  last.endCheck = checkAtEnd(request, state)
  done(null, last)
}

/** Hashes the unread body at request.raw from now on, whoever reads it; the streams only carry it. */
function tapRaw (request: FastifyRequest, state: Verification): SourceTap {
  const head = state.head
  if (head !== null) head.hasher = head.side = null
  const pushed = state.keeper?.release() ?? null
  if (pushed !== null) state.openSide()
  const onEnd = checkAtEnd(request, state)
  const tap = state.tap = new SourceTap(request.raw, state.wanted.received, state.side, onEnd, pushed)
  tap.checkEnded()
  return tap
}

/** A kept body pushed whole, with no stream of another plugin's to wait for, is judged now. */
function judgeKept (request: FastifyRequest, state: Verification): void {
  if (state.last === null && state.keeper?.ended === true) judge(request, state)
}

function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const state = request[kRequestState]
  if (state === null) return done()
  // preValidation comes before any onSend: nothing tapped yet.
  judgeKept(request, state)
  if (state.phase !== 'judged' && unreadRaw(request, state)) tapRaw(request, state)
  if (state.phase !== 'judged') state.phase = 'reading'
  // No Content-Type nor length fields: fastify runs the handler at once (lib/handle-request.js:55-65),
  // whatever arrives; an empty body is judged first, content left to its reader.
  const headers = request.headers
  const parsed = headers['content-type'] !== undefined || hasContent(headers)
  if (state.phase === 'judged' || parsed) return answerValidation(reply, state, done)
  const wake = (): void => answerValidation(reply, state, done)
  if (state.tap !== null) {
    state.tap.wake = wake
    request.raw.read(0)
  } else {
    (state.last as BodyStream).once('close', wake).resume()
  }
}

function answerValidation (reply: FastifyReply, state: Verification, done: HookHandlerDoneFunction): void {
  if (state.failure === null) return done()
  sendProblem(reply, state.failure)
}

// The first route-level onSend hook: a judged request is answered (answers.ts); a success waits while the rest is read
// and judged, but an error answer or a stream (the body may feed it) does not.
function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes): void {
  const state = request[kRequestState]
  if (state === null) return done(null, payload)
  // A kept body the parser read whole and refused (corrupt JSON) before preValidation: its digest failure comes first.
  if (request.raw.readableEnded) judgeKept(request, state)
  if (state.phase === 'judged') return answerJudged(state, reply, payload, done)
  if (reply.statusCode >= 400) state.tap?.stop()
  if (reply.statusCode >= 400 || isNodeStream(payload)) return done(null, payload)
  if (state.last === null && state.keeper === null && state.wanted.decoded.size > 0 && state.side === null) {
    // Answered before preParsing, which never runs now: nothing decodes these codings.
    abandon(request, state, undecodable(state))
    return answerJudged(state, reply, payload, done)
  }
  state.phase = 'reading'
  state.onJudged = () => answerJudged(state, reply, payload, done)
  // The rest cannot be checked: the waiting reply gets the failure, and the connection closes.
  const cutOff = (): void => {
    abandon(request, state, blankFailure(state.params, new FST_DIGEST_INCOMPLETE(), closeFor(request)))
  }
  if (state.tap === null && !unreadRaw(request, state)) {
    // The streams hash it: the last one is read to its end.
    const last = state.last as BodyStream
    if (last.destroyed) return cutOff()
    last.once('close', cutOff).resume()
    return
  }
  const tap = state.tap ?? tapRaw(request, state)
  tap.allowance = state.limit
  tap.cutOff = cutOff
  state.last?.resume()
  if (request.raw.readableFlowing !== true) request.raw.resume()
}

const unreadVerification = (): DigestVerification => ({ verified: false, reason: 'unread', fields: [] })

/**
 * request.digestVerification where the verifier never runs, worked out when read: no digests, `verify: false`, bodyless
 * methods.
 */
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
    getter (this: FastifyRequest) {
      // Not judged yet: a new object on each read, the verdict replacing it.
      if (this[kVerification] === null && this[kRequestState] !== null) return unreadVerification()
      return this[kVerification] ?? (this[kVerification] = defaultVerification(this))
    },
    setter (this: FastifyRequest, value: DigestVerification | null) { this[kVerification] = value }
  })
  fastify.addHook('preParsing', hashReceived)
  return {
    onRoute (routeOptions, params) {
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (params.verify === false || methods.every((m) => BODYLESS_METHODS.has(m.toUpperCase()))) return null
      let limit = 0
      function digestVerifyRequest (
        this: unknown, request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction
      ): void {
        // fastify lib/request.js builds request.routeOptions anew on each read: the limit is read from the route's
        // options once they are final (at the first request), as lib/request.js:189-195 does (the route's, else the
        // server's).
        if (limit === 0) limit = (routeOptions.bodyLimit || fastify.initialConfig.bodyLimit) as number
        readRequest(request, reply, done, params, limit)
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
