// Response digests (docs/design.md, "Two digests per response"): the hooks
// that run the pipeline plan → representation → content → emit.
//
// Two onSend stages, both route-level hooks placed by lib/plugin/route-hooks.ts:
// * the representation stage (lib/plugin/response/representation.ts), first among
//   the route's onSend hooks: it sees the identity representation before
//   compress;
// * the content stage (lib/plugin/response/content.ts), last: it sees the bytes
//   that will be sent.
// Being route-level, they have the route's options at hand (no lookup per
// request). 404s have no route: an instance-level onSend runs both stages for
// them with the plugin's options.
//
// The usual response (a string or Buffer, no Want-* field, no precondition,
// nothing declared) of a route without other onSend hooks takes a shortcut:
// one hook writes the route's unsolicited fields (unsolicitedOf, worked out
// once per route), hashed in one step, with no per-request state and no plan
// (usualResponse).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { ResponseDigestField } from '../../../types/index'
import type { DigestParams } from '../../core/digest-params'
import { requestedSignatures, signaturesFor } from '../../core/integrity'
import type { RouteHookInstaller } from '../route-hooks'
import { getDeclared } from './declared'
import { kResponseState } from '../symbols'
import { FileDigestCache } from '../../core/file-cache'
import { kStaticFile } from './static-files'
import { OmissionLog, missingFields } from './omissions'
import { noContentStatus, planFields, uncoded, unsolicitedOf, type FieldPlan, type RequestFacts, type Unsolicited } from '../../core/response-plan'
import { bytesRepresentation, isNodeStream, streamRepresentation, unwrapPayload } from './representation'
import { bufferedContent, streamedContent } from './content'
import { addVary, dropTrailers, hasDigestTrailers, setField, unencodedDigests, writeShared } from './emit'
import { hookHeaders } from './field-hook'
import type { Payload, ResponseContext, ResponseState } from './reply-state'

type Done = (err: Error | null, payload?: Payload) => void

/** The request decorator's value when the response carries no digest field (only Vary is added). */
const kNothing = Symbol('nothing')

interface WithResponseState { [kResponseState]: ResponseState | typeof kNothing }

function stateOf (request: FastifyRequest): ResponseState | typeof kNothing {
  return (request as unknown as WithResponseState)[kResponseState]
}

function setState (request: FastifyRequest, state: ResponseState | typeof kNothing): void {
  (request as unknown as WithResponseState)[kResponseState] = state
}

function requestFacts (request: FastifyRequest): RequestFacts {
  const headers = request.headers
  return {
    method: request.method,
    wantContentDigest: headers['want-content-digest'],
    wantReprDigest: headers['want-repr-digest'],
    wantUnencodedDigest: headers['want-unencoded-digest'],
    reprDigest: headers['repr-digest'],
    te: headers.te,
    httpVersion: request.raw.httpVersion,
    acceptSignature: headers['accept-signature']
  }
}

/**
 * The usual response, when nothing stands between the two stages: a string
 * or Buffer (no stream, no HEAD, no 206, a status with content), no Want-*
 * field, no Repr-Digest to compare, nothing declared, the reply's first
 * send. Its bytes are the representation, so the fields are the route's
 * unsolicited ones with one value (what bufferedContent's shared value would
 * be), without per-request state; signed when the route signs unasked, or
 * when Accept-Signature asks for a held key (the route's `signed` fields).
 * False, having changed nothing, for any other response: the stages then
 * run in full.
 */
function usualResponse (request: FastifyRequest, reply: FastifyReply, payload: Payload, usual: Unsolicited): boolean {
  if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return false
  const headers = request.headers
  const method = request.method
  const status = reply.statusCode
  let fields: Unsolicited | null = usual
  let signatures = usual.signatures
  const asked = usual.keys.size === 0 ? undefined : headers['accept-signature']
  if (asked !== undefined) {
    const requested = requestedSignatures(asked, usual.keys)
    if (requested.length > 0) {
      if (signatures.length === 0) fields = usual.signed
      signatures = signaturesFor(requested, signatures[0] ?? null)
    }
  }
  if (
    fields === null ||
    method === 'HEAD' || status === 206 || noContentStatus(status) ||
    headers['want-content-digest'] !== undefined || headers['want-repr-digest'] !== undefined ||
    headers['want-unencoded-digest'] !== undefined ||
    (usual.conditional && method === 'GET' && headers['repr-digest'] !== undefined) ||
    getDeclared(reply) !== null || stateOf(request) !== kNothing ||
    // Coded bytes of the route's own are not the unencoded representation.
    (fields.unencoded && !uncoded(reply.getHeader('content-encoding')))
  ) return false
  addVary(reply, usual.keys.size > 0)
  if (fields.write !== null) writeShared(reply, fields.write(payload), fields.content, fields.repr, fields.unencoded, signatures)
  return true
}

/** Tell the application (and the log, once per route) which wanted fields were given up on. */
function reportOmitted (request: FastifyRequest, reply: FastifyReply, state: ResponseState): void {
  if (state.omitted === null) return
  const { plan } = state
  const wanted: Array<ResponseDigestField | 'Signature'> = []
  if (plan.content.length > 0) wanted.push('Content-Digest')
  if (plan.repr.length > 0) wanted.push('Repr-Digest')
  if (plan.unencoded.length > 0) wanted.push('Unencoded-Digest')
  if (plan.signatures.length > 0) wanted.push('Signature')
  state.context.omissions.report(request, reply, state.omitted, missingFields(reply, wanted), state.params.trailers)
}

/**
 * The digest fields are final: on with `payload`, through the route's
 * onDigestFields hook when it has one (lib/plugin/response/field-hook.ts); for
 * digest trailers, the hook runs when they are known.
 */
function fieldsDone (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, params: DigestParams): void {
  const hook = params.onDigestFields
  if (hook === null || hasDigestTrailers(reply)) done(null, payload)
  else hookHeaders(hook, request, reply, payload, done)
}

function contentStage (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, signing: boolean): void {
  const state = stateOf(request)
  addVary(reply, signing)
  if (state === kNothing) {
    done(null, payload)
    return
  }
  const { plan, params } = state
  if (plan.transport === 'declared') {
    // No content: no Content-Digest; Repr-Digest and Unencoded-Digest only when the route declared them.
    setField(reply, 'repr-digest', getDeclared(reply), plan.repr, plan.mode.strict)
    setField(reply, 'unencoded-digest', unencodedDigests(reply, state, null), plan.unencoded, true)
    fieldsDone(request, reply, payload, done, params)
    return
  }
  if (!plan.head && isNodeStream(payload)) {
    streamedContent(request, reply, payload, state).then((p) => {
      reportOmitted(request, reply, state)
      fieldsDone(request, reply, p, done, params)
    }, done)
    return
  }
  const out = bufferedContent(reply, payload, state)
  reportOmitted(request, reply, state)
  fieldsDone(request, reply, out, done, params)
}

export function installResponseDigests (fastify: FastifyInstance, params: DigestParams): RouteHookInstaller<DigestParams> {
  // A primitive initial value: a request the representation stage did not
  // look at carries no digest fields.
  fastify.decorateRequest(kResponseState, kNothing)
  fastify.decorateReply(kStaticFile, null)
  fastify.decorateReply('digestsOmitted', null)
  const files = new FileDigestCache(params.fileCacheSize, {
    background: params.fileHashing === 'background',
    sidecars: params.fileSidecars,
    wrongSidecar (path) {
      fastify.log.warn({ path }, 'fastify-digest-fields: a sidecar checksum does not match its file; the file\'s own digests are used')
    }
  })
  const context: ResponseContext = { files, omissions: new OmissionLog() }
  // SRI keys are plugin-level: every response may depend on Accept-Signature.
  const signing = params.integrityKeys.size > 0

  function digestContentStage (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
    contentStage(request, reply, payload, done, signing)
  }

  /**
   * After the representation stage: on to compress and the content stage, or
   * the content stage now when nothing stands between the two (a 404, a route
   * without other onSend hooks).
   */
  function representationDone (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, both: boolean): void {
    if (both) contentStage(request, reply, payload, done, signing)
    else done(null, payload)
  }

  function representationStage (
    request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, routeParams: DigestParams, both: boolean
  ): void {
    // A state left by an earlier send: this one is fastify's error after it.
    // The new state is set once the plan is made (for a stream, after its
    // file is resolved), before the content stage runs.
    if (stateOf(request) !== kNothing) {
      dropTrailers(reply)
      ;(reply as { digestsOmitted: unknown }).digestsOmitted = null
      setState(request, kNothing)
    }
    const fields: FieldPlan | null = planFields(requestFacts(request), routeParams)
    if (fields === null) {
      representationDone(request, reply, payload, done, both)
      return
    }
    const unwrapped = unwrapPayload(reply, payload)
    if (isNodeStream(unwrapped)) {
      streamRepresentation(request, reply, unwrapped, fields, routeParams, context).then(([out, state]) => {
        setState(request, state)
        representationDone(request, reply, out, done, both)
      }, done)
      return
    }
    setState(request, bytesRepresentation(request, reply, unwrapped, fields, routeParams, context))
    representationDone(request, reply, unwrapped, done, both)
  }

  // 404s never reach onRoute (and compress never touches them): an instance
  // hook runs both stages for them, with the plugin's options.
  const usual = unsolicitedOf(params)
  fastify.addHook('onSend', function digestNotFound (request, reply, payload, done) {
    if (!request.is404) done(null, payload)
    else if (usual !== null && usualResponse(request, reply, payload, usual)) fieldsDone(request, reply, payload, done as Done, params)
    else representationStage(request, reply, payload, done as Done, params, true)
  })

  return {
    onRoute (_routeOptions, routeParams) {
      // The route's own hooks: its options at hand, no lookup per request.
      function digestReprStage (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
        representationStage(request, reply, payload, done, routeParams, false)
      }
      const usual = unsolicitedOf(routeParams)
      function digestBothStages (this: unknown, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
        if (usual !== null && usualResponse(request, reply, payload, usual)) fieldsDone(request, reply, payload, done, routeParams)
        else representationStage(request, reply, payload, done, routeParams, true)
      }
      // The representation stage first among the route's onSend hooks
      // (before compress), the content stage last (after it); with no other
      // onSend hook on the route, one hook runs both (lib/plugin/route-hooks.ts).
      return { onSendAround: { before: digestReprStage, after: digestContentStage, alone: digestBothStages } }
    }
  }
}
