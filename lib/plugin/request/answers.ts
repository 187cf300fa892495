// How a request's failure is answered: the problem details in place of a reply (docs/design.md, "Request
// verification"), and the status of an error thrown for a failed or cut body.
import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import { isNodeStream } from '../../core/digest-stream'
import { PROBLEM_CONTENT_TYPE, type Failure } from '../../core/problem'
import { kRequestState } from '../symbols'
import type { Verification } from './verification-state'

/**
 * The failure's status and headers set on `reply`; its body, a Buffer: for a string fastify adds `; charset=utf-8`,
 * which application/problem+json does not define.
 */
function problemBody (reply: FastifyReply, failure: Failure): Buffer {
  reply.code(failure.statusCode).headers(failure.headers).header('content-type', PROBLEM_CONTENT_TYPE)
  return Buffer.from(JSON.stringify(failure.problem))
}

export const sendProblem = (reply: FastifyReply, failure: Failure): void => { reply.send(problemBody(reply, failure)) }

/**
 * Whether `payload` is fastify's default error body (lib/error-handler.js), e.g. for a digest error a handler rethrew.
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

/** The onSend answer of a judged request: a failure replaces any answer but an error's (ours included). */
export function answerJudged (
  state: Verification, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes
): void {
  const failure = state.failure
  const status = reply.statusCode
  if (failure === null || (status >= 400 && !isDefaultErrorBody(payload, status))) return done(null, payload)
  if (isNodeStream(payload)) (payload as Readable).destroy()
  done(null, problemBody(reply.removeHeader('content-length'), failure))
}

const isErrorStatus = (status: unknown): boolean => typeof status === 'number' && status >= 400 && status <= 599

// The last route-level onError hook (fastify lib/reply.js onErrorHook): an error without a status thrown for a failed
// or cut body (@fastify/multipart's bare ERR_STREAM_PREMATURE_CLOSE) takes the failure's 4xx, or 400 for a cut upload
// (lib/error-status.js).
type StatusError = Error & { statusCode?: unknown, status?: unknown }

export function onError (request: FastifyRequest, reply: FastifyReply, error: StatusError, done: () => void): void {
  const state = request[kRequestState]
  if (state !== null && !isErrorStatus(error.statusCode) && !isErrorStatus(error.status)) {
    if (state.failure !== null) reply.code(state.failure.statusCode)
    else if (request.raw.readableAborted) reply.code(400)
  }
  done()
}
