// Request verification (docs/design.md, "Request verification"):
// Content-Digest, Repr-Digest and the legacy Digest of request content,
// checked as the body streams, whoever reads it. This module wires it: the
// request decorators, and the route-level hooks a route gets (placed by
// lib/plugin/route-hooks.ts). The stages live in lib/request/, in lifecycle order:
// * claims.ts: what the header section claims, and which algorithms to hash;
// * hashing.ts (with source-tap.ts and content-decoding.ts): the first
//   route-level onRequest hook taps request.raw, the last preParsing hook
//   puts the final stream after any decoder;
// * state.ts: the per-request state and its phase;
// * final-check.ts: the check at the end of the body (judgement.ts and
//   problem.ts: the verdict and its problem details);
// * answers.ts: the first route-level preValidation and onSend hooks answer
//   a failure, and hold a success sent before the body was checked;
// * digest-verification.ts: request.digestVerification.
// GET, HEAD and TRACE bodies are never read by fastify: nothing is checked
// there (a Repr-Digest on them is the conditional of docs/design.md).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DigestParams } from '../options'
import type { RouteHookInstaller } from '../route-hooks'
import { kRequestState } from '../symbols'
import { onError, onPreValidation, onSend, type HookDone } from './answers'
import { BODYLESS_METHODS } from '../../core/claims'
import { decorateVerification } from './digest-verification'
import { placeTail, tapRequest } from './hashing'

export function installRequestVerification (fastify: FastifyInstance): RouteHookInstaller<DigestParams> {
  fastify.decorateRequest(kRequestState, null)
  decorateVerification(fastify)
  return {
    onRoute (routeOptions, params) {
      if (params.verify === false) return null
      // A route that only answers bodyless methods never reads a body: no
      // hook at all (its request.digestVerification is worked out when
      // read). Other routes get route-level hooks only, so that the routes
      // without verification pay nothing.
      const methods = Array.isArray(routeOptions.method) ? routeOptions.method : [routeOptions.method]
      if (methods.every((m) => BODYLESS_METHODS.has(m.toUpperCase()))) return null
      function digestVerifyRequest (this: unknown, request: FastifyRequest, reply: FastifyReply, done: HookDone): void {
        tapRequest(request, reply, done, params)
      }
      // The tap is placed by the first route-level onRequest hook, the
      // decoded bytes are taken after the last route-level preParsing hook
      // (after any decoder: @fastify/compress adds its decompressor from
      // onRoute); the preValidation answer and the reply check come before
      // any other route-level hook of theirs (lib/plugin/route-hooks.ts); an error
      // thrown for a failed body gets the failure's status before the error
      // handler runs.
      return {
        onRequestFirst: digestVerifyRequest,
        preParsingLast: placeTail,
        preValidationFirst: onPreValidation,
        onSendFirst: onSend,
        onErrorLast: onError
      }
    }
  }
}
