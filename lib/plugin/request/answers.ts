// Answering for the body: the problem details of a failure (RFC 9457, as
// application/problem+json), sent by preValidation for a parsed body, or by
// the first route-level onSend hook in place of the reply; and a success
// sent before the body was read to its end, held until the rest is read and
// checked (docs/design.md, "A route that answers before reading its body").
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import { FST_DIGEST_INCOMPLETE, FST_DIGEST_UNREAD_TOO_LARGE } from '../../core/errors'
import { kRequestState } from '../symbols'
import { parsesNothing } from '../../core/claims'
import { abandonCheck, routeUnparsed } from './final-check'
import { fieldList, type Failure } from '../../core/judgement'
import { PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { advance, isSettled, type RequestState } from './phase'

export type HookDone = (err?: Error) => void
type ErrorDone = () => void
type SendDone = (err: Error | null, payload?: unknown) => void

/** Sends `failure` as the answer (the caller moves the request, if it has a state, to `answered`). */
export function sendProblem (reply: FastifyReply, failure: Failure): void {
  reply
    .code(failure.error.statusCode)
    .headers(failure.headers)
    .header('content-type', PROBLEM_CONTENT_TYPE)
    // A Buffer: fastify would append `; charset=utf-8` to a JSON type for a
    // string, and application/problem+json defines no charset parameter.
    .send(Buffer.from(JSON.stringify(failure.problem)))
}

/** The first route-level preValidation hook: a parsed body that failed is answered here, before the handler. */
export function onPreValidation (request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
  const state = request[kRequestState]
  if (state === null) {
    done()
    return
  }
  advance(state, 'validated')
  if (!isSettled(state) && parsesNothing(request.headers)) {
    // fastify runs the handler at once for a request it takes to have no
    // body (no Content-Type, no Content-Length or 0, no Transfer-Encoding:
    // lib/handle-request.js:55-65), whatever arrives over HTTP/2 or from a
    // Readable injected: see whether anything does before the handler runs.
    // An empty body is judged now; content is left to its reader (or to the
    // reply check).
    state.tap.awaitData(() => answerValidation(reply, state, done))
    request.raw.read(0)
    return
  }
  answerValidation(reply, state, done)
}

function answerValidation (reply: FastifyReply, state: RequestState, done: HookDone): void {
  if (state.failure !== null) {
    advance(state, 'answered')
    sendProblem(reply, state.failure)
    return
  }
  done()
}

/**
 * Whether `payload` is fastify's default error body (its default error
 * handler's serialization: statusCode, code, error, message), e.g. for the
 * digest error a handler rethrew, or for @fastify/compress's rewrite of it
 * when its decoder stood between the body and the handler.
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

/** The reply to a request whose body failed: the problem, unless the application answered the error itself. */
function answerFailure (reply: FastifyReply, state: RequestState, failure: Failure, payload: unknown, done: SendDone): void {
  if (reply.statusCode >= 400 && !isDefaultErrorBody(payload, reply.statusCode)) {
    // An error handler of the application's answered (with an error status).
    done(null, payload)
    return
  }
  advance(state, 'answered')
  // Whatever the handler meant to send (a success for a body that failed,
  // or fastify's default error body), the answer is the problem.
  if (isStream(payload)) (payload as Readable).destroy()
  reply.code(failure.error.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE).removeHeader('content-length')
  done(null, JSON.stringify(failure.problem))
}

function isStream (payload: unknown): boolean {
  // Object(): no own branch for null and undefined.
  return typeof (Object(payload) as Partial<Readable>).pipe === 'function'
}

/**
 * The reply that waits for the final check. Made here, not written as
 * `state.waitingReply = () => …` in onSend: V8 allocates a function literal
 * assigned straight to a property in the old generation, where it would keep
 * the request, the reply and the payload alive through every scavenge until
 * the next mark-compact (see source-tap.ts; measured there, not on this path,
 * which no benchmark takes).
 */
function sendWhenChecked (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: SendDone): () => void {
  return () => onSend(request, reply, payload, done)
}

/**
 * The first route-level onSend hook (before the response digests). A
 * success for a body that is still arriving waits for its end and its
 * check; a body that failed gets the problem instead of the reply.
 */
export function onSend (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: SendDone): void {
  const state = request[kRequestState]
  if (state === null || state.phase === 'answered') {
    done(null, payload)
    return
  }
  if (state.phase === 'checked') {
    if (state.failure === null) done(null, payload)
    else answerFailure(reply, state, state.failure, payload, done)
    return
  }
  if (reply.statusCode >= 400 || isStream(payload)) {
    // An error answer claims nothing about the body. A stream may be fed by
    // the body itself (an echo): it cannot wait for the end, and a failure
    // still reaches it through the body stream it reads.
    if (reply.statusCode >= 400) state.tap.stop()
    done(null, payload)
    return
  }
  if (state.phase === 'tapping') {
    // Answered before the route's preParsing hooks ran: they never will.
    routeUnparsed(request, state)
    if (isSettled(state)) {
      onSend(request, reply, payload, done)
      return
    }
  }
  // Read the rest (within the route's bodyLimit) and check it before the
  // answer goes out: never a success for a body that was not checked.
  advance(state, 'validated')
  state.waitingReply = sendWhenChecked(request, reply, payload, done)
  state.tap.limitRest(state.limit, () => {
    const fields = fieldList(state.claims.map((c) => c.field)) || 'Content-Digest'
    abandonCheck(request, state, new FST_DIGEST_UNREAD_TOO_LARGE(fields, String(state.limit)))
  }, () => {
    abandonCheck(request, state, new FST_DIGEST_INCOMPLETE())
  })
  if (state.tail !== null) state.tail.resume()
  if (request.raw.readableFlowing !== true) request.raw.resume()
}

const isErrorStatus = (status: unknown): boolean => typeof status === 'number' && status >= 400 && status <= 599

/** An error status (4xx or 5xx) the error carries, the way fastify reads one (lib/error-status.js: statusCode, else status). */
function hasErrorStatus (error: { statusCode?: unknown, status?: unknown }): boolean {
  return isErrorStatus(error.statusCode) || isErrorStatus(error.status)
}

/**
 * The last route-level onError hook (they run before the error handler,
 * fastify lib/reply.js onErrorHook). An error that carries no status of its
 * own, thrown after the body failed its check or was cut off by the client,
 * is the reader's account of that (@fastify/multipart 9 destroys the file
 * stream with a bare ERR_STREAM_PREMATURE_CLOSE): it takes the failure's
 * 4xx, or 400 for a cut upload (as source-tap.ts gives the source's own
 * error), so that fastify's default error handler neither logs a client's
 * bad or broken body as a 500 nor answers with one (it keeps a status
 * already set, lib/error-status.js). A failure's answer is its problem
 * either way (onSend above).
 */
export function onError (request: FastifyRequest, reply: FastifyReply, error: Error, done: ErrorDone): void {
  const state = request[kRequestState]
  if (state !== null && !hasErrorStatus(error as { statusCode?: unknown })) {
    if (state.failure !== null) reply.code(state.failure.error.statusCode)
    else if (request.raw.readableAborted) reply.code(400)
  }
  done()
}
