// request.digestVerification (docs/design.md, "request.digestVerification"):
// set by the checks under kVerification, and worked out when first read
// where no check runs, so that those requests, most of them GETs, cost
// nothing here.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { DigestVerification } from '../../../types/index'
import type { DigestParams } from '../options'
import { kRouteParams, kVerification } from '../symbols'
import { BODYLESS_METHODS, hasContent } from '../../core/claims'

declare module 'fastify' {
  interface FastifyRequest {
    /** request.digestVerification as set (null: worked out when read). */
    [kVerification]: DigestVerification | null
  }
}

/** The route's params, which the entry's onRoute hook puts in its config (null: no digests). */
function routeParams (request: FastifyRequest): DigestParams | undefined {
  return (request.routeOptions.config as { [kRouteParams]?: DigestParams } | undefined)?.[kRouteParams]
}

export function setVerification (request: FastifyRequest, verification: DigestVerification): void {
  request[kVerification] = verification
}

/**
 * request.digestVerification where the verifier never runs: routes without
 * digests (null), `verify: false` ('disabled'), and bodyless methods, whose
 * bodies fastify never reads ('no-body' or 'unread').
 */
function defaultVerification (request: FastifyRequest): DigestVerification | null {
  const params = routeParams(request)
  if (params === undefined) return null
  if (params.verify === false) return { verified: false, reason: 'disabled', fields: [] }
  if (BODYLESS_METHODS.has(request.method)) {
    // A Repr-Digest on a GET is the conditional of docs/design.md ("The 406 rule"), not a claim about content.
    return { verified: false, reason: hasContent(request.headers) ? 'unread' : 'no-body', fields: [] }
  }
  return null
}

function getVerification (this: FastifyRequest): DigestVerification | null {
  // Kept once worked out: the same object on every read, as if it had been set.
  return this[kVerification] ?? (this[kVerification] = defaultVerification(this))
}

function putVerification (this: FastifyRequest, value: DigestVerification | null): void {
  this[kVerification] = value
}

/** Decorates request.digestVerification (a getter and a setter) and its slot. */
export function decorateVerification (fastify: FastifyInstance): void {
  fastify.decorateRequest(kVerification, null)
  fastify.decorateRequest('digestVerification', { getter: getVerification, setter: putVerification })
}
