// Request verification's wiring: request.digestVerification, and the
// route-level hooks a route gets (placed by lib/plugin/route-hooks.ts; the
// hooks themselves are in body-check.ts). GET, HEAD and TRACE bodies are
// never read by fastify (lib/handle-request.js:34-37): nothing is checked
// there, and a Repr-Digest on them is the conditional of docs/design.md.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DigestVerification } from '../../../types/index'
import type { DigestParams } from '../plugin-options'
import type { RouteHookInstaller } from '../route-hooks'
import { kRequestState, kRouteParams, kVerification } from '../symbols'
import { BODYLESS_METHODS, hasContent } from '../../core/claims'
import { hashReceived, onError, onPreValidation, onSend, placeStream, readRequest } from './body-check'

declare module 'fastify' {
  interface FastifyRequest {
    /** request.digestVerification as set (null: worked out when read). */
    [kVerification]: DigestVerification | null
  }
}

/**
 * request.digestVerification where the verifier never runs, worked out when
 * read so that those requests (most of them GETs) cost nothing: routes
 * without digests (null), `verify: false`, and bodyless methods.
 */
function defaultVerification (request: FastifyRequest): DigestVerification | null {
  const params = (request.routeOptions.config as { [kRouteParams]?: DigestParams } | undefined)?.[kRouteParams]
  if (params === undefined) return null
  if (params.verify === false) return { verified: false, reason: 'disabled', fields: [] }
  if (BODYLESS_METHODS.has(request.method)) {
    return { verified: false, reason: hasContent(request.headers) ? 'unread' : 'no-body', fields: [] }
  }
  return null
}

function getVerification (this: FastifyRequest): DigestVerification | null {
  // Kept once worked out: the same object on every read.
  return this[kVerification] ?? (this[kVerification] = defaultVerification(this))
}

function putVerification (this: FastifyRequest, value: DigestVerification | null): void {
  this[kVerification] = value
}

export function installRequestVerification (fastify: FastifyInstance): RouteHookInstaller<DigestParams> {
  fastify.decorateRequest(kRequestState, null)
  fastify.decorateRequest(kVerification, null)
  fastify.decorateRequest('digestVerification', { getter: getVerification, setter: putVerification })
  fastify.addHook('preParsing', hashReceived)
  return {
    onRoute (routeOptions, params) {
      if (params.verify === false) return null
      // A route that only answers bodyless methods never reads a body.
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (methods.every((m) => BODYLESS_METHODS.has(m.toUpperCase()))) return null
      function digestVerifyRequest (this: unknown, request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
        readRequest(request, reply, done, params)
      }
      // The claims are read before any other hook of the route's; the
      // stream comes after any decoder (@fastify/compress adds its
      // decompressor from onRoute, first); the answers come before any
      // other route-level preValidation and onSend hook.
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
