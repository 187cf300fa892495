// Response digests (docs/design.md, "Where the hooks run"): the representation stage runs first among
// the route's onSend hooks, before @fastify/compress; the content stage last. A route without other
// onSend hooks gets one hook doing both; 404s, which have no route, an instance-level one.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { DigestParams } from '../../core/option-checks'
import { digestFieldOf, fieldWriter } from '../../core/fields'
import type { RouteHookInstaller } from '../route-hooks'
import { getDeclared } from './declared'
import { kResponseState } from '../symbols'
import { FileDigestCache } from '../../core/file-cache'
import { kStaticFile } from './static-files'
import {
  noContentStatus, PLAN_FIELDS, planFields, uncoded, type FieldPlan, type RequestFacts
} from '../../core/response-plan'
import { isNodeStream } from '../../core/digest-stream'
import { unwrapPayload } from './payload'
import { ResponseDigests } from './response-digests'
import type { RouteResponse } from './omissions'
import { addVary, dropTrailers, writeFields } from './emit'
import { fieldsDone, type Done, type Payload } from './field-hook'

/**
 * The request decorator kResponseState: the response's ResponseDigests, which the representation stage makes and the
 * content stage finishes; null when no digest field goes (only Vary).
 */
function slot (request: FastifyRequest): { [kResponseState]: ResponseDigests | null } {
  return request as unknown as { [kResponseState]: ResponseDigests | null }
}

type Writer = ((data: string | Buffer) => string) | null

// A route's plan for a request that asks for nothing, worked out once, and the writer of its shared value;
// and the same for the last Accept-Signature that came alone (a browser asks in the same words every time).
interface Usual {
  readonly plan: FieldPlan | null
  readonly write: Writer
  asked: { readonly value: string, readonly plan: FieldPlan | null, readonly write: Writer } | null
}

function writerOf (plan: FieldPlan | null, params: DigestParams): Writer {
  return plan?.shared == null ? null : fieldWriter(plan.shared, params.strict)
}

// Whether nothing planFields() reads but Accept-Signature's value (its own cache) can change the plan: none of the
// other fields of PLAN_FIELDS, but a Repr-Digest, which is a precondition on a GET only (preconditionOf()); a HEAD
// never has the usual plan.
function asksNothing (headers: IncomingHttpHeaders, method: string): boolean {
  if (method === 'HEAD') return false
  for (const name of PLAN_FIELDS) {
    if (name === 'accept-signature' || headers[name] === undefined) continue
    if (name !== 'repr-digest' || method === 'GET') return false
  }
  return true
}

/** The fields for this request: the route's usual plan when the request says nothing that changes it. */
function fieldsFor (request: FastifyRequest, params: DigestParams, usual: Usual): FieldPlan | null {
  const h = request.headers
  const asked = h['accept-signature']
  const method = request.method
  const alone = asksNothing(h, method)
  if (alone && asked === undefined) return usual.plan
  if (alone && usual.asked !== null && usual.asked.value === asked) return usual.asked.plan
  // Every field is there; planFields can read those of PLAN_FIELDS only.
  const headers = h as RequestFacts['headers']
  const plan = planFields({ method, httpVersion: request.raw.httpVersion, headers }, params)
  if (alone && typeof asked === 'string') usual.asked = { value: asked, plan, write: writerOf(plan, params) }
  return plan
}

// The usual response, the bytes sent being the uncoded representation: a full response of a string or Buffer, nothing
// declared, fields of one value (plan.shared: no precondition), no coding (at the content stage, none since the
// representation stage): hashed and written in one step. Else false, nothing changed.
function usualResponse (
  reply: FastifyReply, payload: Payload, fields: FieldPlan, usual: Usual, signing: boolean
): boolean {
  const status = reply.statusCode
  const shared = fields.shared
  if (
    shared === null || (typeof payload !== 'string' && !Buffer.isBuffer(payload)) ||
    fields.head || status === 206 || noContentStatus(status) || getDeclared(reply) !== null ||
    (fields.unencoded.length > 0 && !uncoded(reply.getHeader('content-encoding')))
  ) return false
  addVary(reply, signing)
  const write = shared === usual.plan?.shared
    ? usual.write
    : shared === usual.asked?.plan?.shared ? usual.asked.write : null
  const value = write !== null ? write(payload) : digestFieldOf(shared, payload, fields.strict) as string
  const { content, repr, unencoded } = fields
  writeFields(
    reply, content.length > 0 ? value : null, repr.length > 0 ? value : null, unencoded.length > 0 ? value : null,
    fields.signatures
  )
  return true
}

/** The onSend stages of a route (or of the 404s, which have no route): its params and usual plan. */
class RouteStages implements RouteResponse {
  readonly #usual: Usual

  constructor (readonly params: DigestParams, readonly context: RouteResponse['context'], readonly signing: boolean) {
    const plan = planFields({ method: 'GET', httpVersion: '1.1', headers: {} }, params)
    this.#usual = { plan, write: writerOf(plan, params), asked: null }
  }

  /** The representation stage; `both`: no other onSend hook stands between it and the content stage, run at once. */
  representation (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, both: boolean): void {
    // A state left by an earlier send: this one is fastify's error after it.
    if (slot(request)[kResponseState] !== null) {
      dropTrailers(reply)
      ;(reply as { digestsOmitted: unknown }).digestsOmitted = null
      slot(request)[kResponseState] = null
    }
    const fields = fieldsFor(request, this.params, this.#usual)
    if (fields === null) return this.#representationDone(request, reply, payload, done, both)
    if (both && usualResponse(reply, payload, fields, this.#usual, this.signing)) {
      return fieldsDone(request, reply, payload, done, this.params)
    }
    const unwrapped = unwrapPayload(reply, payload)
    if (isNodeStream(unwrapped)) {
      ResponseDigests.ofStream(request, reply, unwrapped, fields, this).then(([out, response]) => {
        slot(request)[kResponseState] = response
        this.#representationDone(request, reply, out, done, both)
      }, done)
      return
    }
    slot(request)[kResponseState] = ResponseDigests.ofBytes(reply, unwrapped, fields, this)
    this.#representationDone(request, reply, unwrapped, done, both)
  }

  /** The content stage: the bytes sent, after @fastify/compress. */
  content (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
    const response = slot(request)[kResponseState]
    if (response === null) {
      addVary(reply, this.signing)
      return done(null, payload)
    }
    const params = this.params
    const usual = response.sendsRepresentation(reply) &&
      usualResponse(reply, payload, response.fields, this.#usual, this.signing)
    if (usual) return fieldsDone(request, reply, payload, done, params)
    addVary(reply, this.signing)
    const out = response.content(request, reply, payload)
    if (out instanceof Promise) out.then((p) => fieldsDone(request, reply, p, done, params), done)
    else fieldsDone(request, reply, out, done, params)
  }

  /** On to compress and the content stage, or the content stage now when nothing stands between them. */
  #representationDone (
    request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, both: boolean
  ): void {
    if (both) this.content(request, reply, payload, done)
    else done(null, payload)
  }
}

const SIDECAR_WRONG =
  'fastify-digest-fields: a sidecar checksum does not match its file; the file\'s own digests are used'

export function installResponseDigests (
  fastify: FastifyInstance, params: DigestParams
): RouteHookInstaller<DigestParams> {
  fastify.decorateRequest(kResponseState, null)
  fastify.decorateReply(kStaticFile, null)
  fastify.decorateReply('digestsOmitted', null)
  const files = new FileDigestCache(params.fileCacheSize, {
    background: params.fileHashing === 'background',
    sidecars: params.fileSidecars,
    wrongSidecar (path) { fastify.log.warn({ path }, SIDECAR_WRONG) }
  })
  const context: RouteResponse['context'] = { files, warned: new Set() }
  // SRI keys are plugin-level: every response may depend on Accept-Signature.
  const signing = params.integrityKeys.size > 0

  // 404s never reach onRoute (and compress never touches them).
  const notFound = new RouteStages(params, context, signing)
  fastify.addHook('onSend', function digestNotFound (request, reply, payload, done) {
    if (!request.is404) done(null, payload)
    else notFound.representation(request, reply, payload, done as Done, true)
  })

  return {
    onRoute (_routeOptions, routeParams) {
      const stages = new RouteStages(routeParams, context, signing)
      return {
        onSendAround: {
          before (request, reply, payload, done) {
            stages.representation(request, reply, payload, done as Done, false)
          },
          after (request, reply, payload, done) { stages.content(request, reply, payload, done as Done) },
          alone (request, reply, payload, done) { stages.representation(request, reply, payload, done as Done, true) }
        }
      }
    }
  }
}
