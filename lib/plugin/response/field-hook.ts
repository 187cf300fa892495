// The onDigestFields hook (docs/design.md, "Signing responses"), its fields added in the digests' section. Its
// failure is the reply's error (fastify lib/reply.js wrapOnSendEnd → onErrorHook), or cuts the trailers off.
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AddedFields, DigestFieldValues, DigestFieldsHook } from '../../../types/index'
import { FST_DIGEST_FIELD_HOOK_FAILED } from '../../core/errors'
import { describe, type DigestParams } from '../../core/option-checks'
import type { Done, Payload } from './stages'

type TrailerDone = (err: Error | null, value?: string) => void
export type DigestField = 'content-digest' | 'repr-digest' | 'unencoded-digest'
type Fields = Partial<Record<DigestField, string>>
type Added = Array<[string, string]>

export const DIGEST_FIELDS: readonly DigestField[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/** The digest fields set as headers on `reply`, added to `into`. */
function headerFields (reply: FastifyReply, into: Fields = {}): Fields {
  for (const name of DIGEST_FIELDS) {
    const value = reply.getHeader(name)
    if (typeof value === 'string') into[name] = value
  }
  return into
}

/** The hook's fields, checked: strings or lists of them (RFC 9110 §5.3: one line), naming no digest field. */
function addedFields (result: AddedFields): Added {
  if (result === undefined || result === null) return []
  if (typeof result !== 'object') throw new Error(`expected an object of fields or nothing, got ${describe(result)}`)
  const out: Added = []
  for (const [name, value] of Object.entries(result) as Array<[string, unknown]>) {
    const line = Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(', ') : value
    if (typeof line !== 'string') throw new Error(`expected the value of ${name} to be a string or a list of strings, got ${describe(value)}`)
    if ((DIGEST_FIELDS as readonly string[]).includes(name.toLowerCase())) throw new Error(`${name} is a digest field: the hook adds fields, it does not replace digests`)
    out.push([name, line])
  }
  return out
}

/** Call `hook` with `fields`; `then` gets its checked fields, or `fail` its failure. Synchronous when the hook is. */
function run (
  hook: DigestFieldsHook, request: FastifyRequest, reply: FastifyReply, fields: Fields,
  then: (added: Added) => void, fail: (err: Error) => void
): void {
  const failed = (err: unknown): void => fail(new FST_DIGEST_FIELD_HOOK_FAILED(err instanceof Error ? err.message : describe(err), { cause: err }))
  let added: Added | Promise<Added>
  try {
    const result = hook(request, reply, Object.freeze(fields) as DigestFieldValues)
    added = typeof (result as PromiseLike<unknown> | null)?.then === 'function' ? Promise.resolve(result).then(addedFields) : addedFields(result as AddedFields)
  } catch (err) {
    return failed(err)
  }
  if (Array.isArray(added)) then(added)
  else added.then(then, failed)
}

/** Whether digest trailers are declared: the onDigestFields hook then runs with them. */
export function hasDigestTrailers (reply: FastifyReply): boolean {
  return DIGEST_FIELDS.some((name) => reply.hasTrailer(name))
}

// The fields are final: on, through the hook over the header section unless it runs with the trailers. No digest
// header, no call; on failure the digests go and the error is the reply's.
export function fieldsDone (request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done, params: DigestParams): void {
  const hook = params.onDigestFields
  if (hook === null || hasDigestTrailers(reply) || !DIGEST_FIELDS.some((name) => typeof reply.getHeader(name) === 'string')) return done(null, payload)
  run(hook, request, reply, headerFields(reply), (added) => {
    for (const [name, value] of added) reply.header(name, value)
    done(null, payload)
  }, (err) => {
    for (const name of DIGEST_FIELDS) reply.removeHeader(name)
    done(err)
  })
}

// The trailer section: the digest trailers' callbacks (called together after the content, lib/reply.js
// sendTrailer) wait for all values; the hook's fields join them through the raw response's addTrailers,
// which fastify calls once (docs/design.md, "What this plugin relies on").
export class TrailerHook {
  private readonly values: Array<[DigestField, string | null, TrailerDone]> = []

  constructor (private readonly hook: DigestFieldsHook, private readonly request: FastifyRequest, private readonly reply: FastifyReply) {}

  /** The value of trailer `name` (null: none); the hook runs once each digest trailer on the reply has one. */
  settle (name: DigestField, value: string | null, done: TrailerDone): void {
    const { reply, values } = this
    values.push([name, value, done])
    if (values.length < DIGEST_FIELDS.filter((field) => reply.hasTrailer(field)).length) return
    // A trailer whose callback fails is left out (lib/reply.js sendTrailer).
    const send = (): void => {
      for (const [name, value, done] of values) done(value === null ? new Error(`no ${name} value`) : null, value ?? undefined)
    }
    if (values.every(([, value]) => value === null)) return send()
    const fields: Fields = {}
    for (const [name, value] of values) if (value !== null) fields[name] = value
    headerFields(reply, fields)
    run(this.hook, this.request, reply, fields, (added) => {
      const addTrailers = reply.raw.addTrailers
      reply.raw.addTrailers = function addTrailersWithAdded (this: ServerResponse | Http2ServerResponse, trailers: Record<string, string>) {
        addTrailers.call(this, { ...trailers, ...Object.fromEntries(added) })
      } as typeof addTrailers
      send()
    }, (err) => {
      reply.log.error({ err }, 'fastify-digest-fields: the onDigestFields hook failed on the trailers; the response was cut off')
      // With an error: an HTTP/2 stream is reset with INTERNAL_ERROR.
      reply.raw.destroy(err)
    })
  }
}
