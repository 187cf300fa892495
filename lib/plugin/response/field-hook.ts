// The onDigestFields hook (docs/design.md, "Signing responses"), its fields added in the digests' section, and the
// digest trailers it waits for. Its failure is the reply's error (fastify lib/reply.js wrapOnSendEnd →
// onErrorHook), or cuts the trailers off.
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parseDictionary } from 'structured-headers'
import type { AddedFields, DigestAlgorithm, DigestFieldValues, DigestFieldsHook } from '../../../types/index'
import type { DigestResults } from '../../core/digest-stream'
import { FST_DIGEST_FIELD_HOOK_FAILED } from '../../core/errors'
import { serializeSelected } from '../../core/fields'
import { describe, type DigestParams } from '../../core/option-checks'
import { withNoTransform } from '../../core/cache-control'

/** An onSend hook's payload, and its callback. */
export type Payload = unknown
export type Done = (err: Error | null, payload?: Payload) => void
type TrailerDone = (err: Error | null, value?: string) => void

const HOOK_FAILED = 'fastify-digest-fields: the onDigestFields hook failed on the trailers; the response was cut off'
export type DigestField = 'content-digest' | 'repr-digest' | 'unencoded-digest'
type Fields = Partial<Record<DigestField, string>>
type Added = Array<[string, string]>

export const DIGEST_FIELDS: readonly DigestField[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/** Whether `reply` carries a digest field in its header section. */
function hasDigestHeaders (reply: FastifyReply): boolean {
  return DIGEST_FIELDS.some((name) => typeof reply.getHeader(name) === 'string')
}

/** The digest fields set as headers on `reply`, added to `into`. */
function headerFields (reply: FastifyReply, into: Fields = {}): Fields {
  for (const name of DIGEST_FIELDS) {
    const value = reply.getHeader(name)
    if (typeof value === 'string') into[name] = value
  }
  return into
}

// A field name is a token (RFC 9110 §5.1, §5.6.2); a value holds field-vchar, SP and HTAB only (§5.5: no CR, LF
// or NUL), as node's own check of a header (lib/_http_common.js checkInvalidHeaderChar).
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/
// Fields that frame, route or code the message, which a hook cannot add to a response already framed: RFC 9110
// §6.5.1 (not in trailers), RFC 9113 §8.2.2 (connection-specific, refused by HTTP/2).
const FRAMING = new Set(['connection', 'content-encoding', 'content-length', 'host', 'http2-settings', 'keep-alive',
  'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

/** One returned field, checked: a token name that is no digest or framing field, a string or list of strings. */
function addedField (name: string, value: unknown): [string, string] {
  if (!TOKEN.test(name)) throw new Error(`${JSON.stringify(name)} is not a field name (RFC 9110 §5.1: a token)`)
  const lower = name.toLowerCase()
  if ((DIGEST_FIELDS as readonly string[]).includes(lower)) {
    throw new Error(`${name} is a digest field: the hook adds fields, it does not replace digests`)
  }
  if (FRAMING.has(lower)) throw new Error(`${name} frames or routes the message: a hook cannot add it`)
  const line = Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(', ') : value
  if (typeof line !== 'string') {
    throw new Error(`expected the value of ${name} to be a string or a list of strings, got ${describe(value)}`)
  }
  if (!FIELD_VALUE.test(line)) {
    throw new Error(`the value of ${name} holds a character a field value cannot (RFC 9110 §5.5)`)
  }
  return [lower, line]
}

const SIGNATURE_FIELDS = new Set(['signature', 'signature-input'])

/** The labels of a Signature or Signature-Input value, a Dictionary (RFC 9421 §4.1, §4.2). */
function labels (name: string, value: string): string[] {
  try {
    return [...parseDictionary(value).keys()]
  } catch {
    throw new Error(`the value of ${name} is not a Structured Field Dictionary (RFC 9421 §4)`)
  }
}

// A Signature or Signature-Input the header section holds already (the SRI one, or the route's) and the hook's: one
// Dictionary of both, each signature under its own label (RFC 9421 §4.2); a label used twice is refused.
function joined (name: string, value: string, headers: FastifyReply | null): string {
  const current = SIGNATURE_FIELDS.has(name) ? headers?.getHeader(name) : undefined
  if (typeof current !== 'string') return value
  const taken = new Set(labels(name, current))
  const clash = labels(name, value).find((label) => taken.has(label))
  if (clash !== undefined) throw new Error(`the ${name} label ${clash} is taken by the response's own signature`)
  return `${current}, ${value}`
}

/** The hook's fields, checked (RFC 9110 §5.3: a list is one line); nothing returned is nothing to add. */
function addedFields (result: AddedFields, headers: FastifyReply | null): Added {
  if (result === undefined || result === null) return []
  if (typeof result !== 'object' || Array.isArray(result)) {
    throw new Error(`expected an object of fields or nothing, got ${describe(result)}`)
  }
  return Object.entries(result as Record<string, unknown>).map(([name, value]) => {
    const [lower, line] = addedField(name, value)
    return [lower, joined(lower, line, headers)]
  })
}

interface Call {
  readonly request: FastifyRequest
  readonly reply: FastifyReply
  readonly fields: Fields
  /** The reply when the hook's fields join its header section; null for the trailers. */
  readonly headers: FastifyReply | null
}

/** Call the hook; `then` gets its checked fields, or `fail` its failure. Synchronous when the hook is. */
function run (hook: DigestFieldsHook, call: Call, then: (added: Added) => void, fail: (err: Error) => void): void {
  let result: unknown
  try {
    result = hook(call.request, call.reply, Object.freeze(call.fields) as DigestFieldValues)
    if (typeof (result as PromiseLike<unknown> | null)?.then !== 'function') return checked(result, call, then, fail)
  } catch (err) {
    return fail(hookError('it threw', err))
  }
  const rejected = (err: unknown): void => fail(hookError('it rejected', err))
  Promise.resolve(result).then((value) => checked(value, call, then, fail), rejected)
}

/** The hook's failure: its own error is the cause, whose message the log adds (pino's err serializer). */
function hookError (how: string, err: unknown): Error {
  return new FST_DIGEST_FIELD_HOOK_FAILED(err instanceof Error ? how : `${how} ${describe(err)}`, { cause: err })
}

/** `then` with the fields `result` holds, or `fail` with why they cannot go out. */
function checked (result: unknown, call: Call, then: (added: Added) => void, fail: (err: Error) => void): void {
  let added: Added
  try {
    added = addedFields(result as AddedFields, call.headers)
  } catch (err) {
    return fail(new FST_DIGEST_FIELD_HOOK_FAILED(`it returned what cannot go out: ${(err as Error).message}`))
  }
  then(added)
}

/** Whether digest trailers are declared: the onDigestFields hook then runs with them. */
export function hasDigestTrailers (reply: FastifyReply): boolean {
  return DIGEST_FIELDS.some((name) => reply.hasTrailer(name))
}

// The fields are final: `noTransform` marks a response that carries one (RFC 9110 §7.7: an intermediary that honours
// no-transform leaves the content they describe alone); then on, through the hook over the header section unless it
// runs with the trailers. No digest header, no call; on failure the digests go and the error is the reply's.
export function fieldsDone (
  request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, params: DigestParams
): void {
  const trailers = hasDigestTrailers(reply)
  const headers = !trailers && hasDigestHeaders(reply)
  if (params.noTransform && (trailers || headers)) {
    const value = withNoTransform(reply.getHeader('cache-control'))
    if (value !== null) reply.header('cache-control', value)
  }
  const hook = params.onDigestFields
  if (hook === null || !headers) return done(null, payload)
  run(hook, { request, reply, fields: headerFields(reply), headers: reply }, (added) => {
    for (const [name, value] of added) reply.header(name, value)
    done(null, payload)
  }, (err) => {
    // The error handler answers with a body of its own: the digests, signatures and coding of this one go (fastify
    // lib/error-handler.js handleError drops Content-Type and Content-Length only).
    for (const name of [...DIGEST_FIELDS, ...SIGNATURE_FIELDS, 'content-encoding']) reply.removeHeader(name)
    done(err)
  })
}

/** The digests of a field, once the body is sent. */
export type Compute = (reply: FastifyReply) => DigestResults | null

/** A trailer's value for fastify; an unknown one fails, and fastify drops it (lib/reply.js sendTrailer). */
function settled (name: DigestField, value: string | null, done: TrailerDone): void {
  done(value === null ? new Error(`no ${name} value`) : null, value ?? undefined)
}

// A response's digest trailers (RFC 9530 §2, §3; draft-ietf-httpbis-unencoded-digest §3: every field may be a
// trailer). With the onDigestFields `hook`, their callbacks (called together after the content, lib/reply.js
// sendTrailer) wait for all values; the hook's fields join them through the raw response's addTrailers, which fastify
// calls once (docs/design.md, "What this plugin relies on").
export class DigestTrailers {
  readonly #values: Array<[DigestField, string | null, TrailerDone]> = []

  constructor (
    readonly request: FastifyRequest, readonly reply: FastifyReply, readonly hook: DigestFieldsHook | null
  ) {}

  /** A digest trailer, valued once the body is sent; a header when `now`. */
  declare (name: DigestField, algs: readonly DigestAlgorithm[], strict: boolean, compute: Compute, now = false): void {
    if (algs.length === 0) return
    if (now) {
      const value = serializeSelected(compute(this.reply), algs, strict)
      if (value !== null) this.reply.header(name, value)
      return
    }
    this.reply.trailer(name, (r, _payload, done) => {
      const value = serializeSelected(compute(r), algs, strict)
      if (this.hook === null) settled(name, value, done)
      else this.#settle(this.hook, name, value, done)
    })
  }

  /** The value of trailer `name` (null: none); the hook runs once each digest trailer on the reply has one. */
  #settle (hook: DigestFieldsHook, name: DigestField, value: string | null, done: TrailerDone): void {
    const { reply } = this
    const values = this.#values
    values.push([name, value, done])
    if (values.length < DIGEST_FIELDS.filter((field) => reply.hasTrailer(field)).length) return
    const send = (): void => {
      for (const [name, value, done] of values) settled(name, value, done)
    }
    if (values.every(([, value]) => value === null)) return send()
    const fields: Fields = {}
    for (const [name, value] of values) if (value !== null) fields[name] = value
    headerFields(reply, fields)
    run(hook, { request: this.request, reply, fields, headers: null }, (added) => {
      const addTrailers = reply.raw.addTrailers
      reply.raw.addTrailers = function addTrailersWithAdded (
        this: ServerResponse | Http2ServerResponse, trailers: Record<string, string>
      ) {
        addTrailers.call(this, { ...trailers, ...Object.fromEntries(added) })
      } as typeof addTrailers
      send()
    }, (err) => {
      reply.log.error({ err }, HOOK_FAILED)
      // With an error: an HTTP/2 stream is reset with INTERNAL_ERROR.
      reply.raw.destroy(err)
    })
  }
}
