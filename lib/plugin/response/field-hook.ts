// The onDigestFields option (docs/design.md, "Signing responses"): a hook
// called once a response's digest fields are final and before they are
// written, whose fields are added in the same section. A signer (RFC 9421)
// needs exactly this: a signature over Content-Digest protects the content
// only when it is computed from the digest that is sent.
//
// A hook that fails never lets the response go out as if it had run:
// * headers: the error goes to fastify's error handling (an onSend hook's
//   error: fastify lib/hooks.js onSendHookRunner → lib/reply.js
//   wrapOnSendEnd → onErrorHook), so the reply is the error handler's;
// * trailers: the content has gone out; the response is cut off (HTTP/1.1:
//   no last chunk, RFC 9112 §7.1; HTTP/2: RST_STREAM, RFC 9113 §8.1).
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AddedFields, DigestFieldValues, DigestFieldsHook } from '../../../types/index'
import { FST_DIGEST_FIELD_HOOK_FAILED } from '../../core/errors'
import { describe } from '../../core/option-checks'
import type { Payload } from './reply-state'

type Done = (err: Error | null, payload?: Payload) => void
type RawResponse = ServerResponse | Http2ServerResponse
export type DigestField = 'content-digest' | 'repr-digest' | 'unencoded-digest'
type Fields = Partial<Record<DigestField, string>>
type Added = Array<[string, string]>

export const DIGEST_FIELDS: readonly DigestField[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/** The digest fields set as headers on `reply`, added to `into`; null when there is none. */
function headerFields (reply: FastifyReply, into: Fields = {}): Fields | null {
  let any = false
  for (const name of DIGEST_FIELDS) {
    const value = reply.getHeader(name)
    if (typeof value === 'string') {
      into[name] = value
      any = true
    }
  }
  return any ? into : null
}

function failure (err: unknown): Error {
  return new FST_DIGEST_FIELD_HOOK_FAILED(err instanceof Error ? err.message : describe(err), { cause: err })
}

/** The hook's fields, checked: an object of strings, naming no digest field (the digests given are the ones sent). */
function addedFields (result: AddedFields): Added {
  if (result === undefined || result === null) return []
  if (typeof result !== 'object') throw new Error(`expected an object of fields or nothing, got ${describe(result)}`)
  const out: Added = []
  for (const [name, value] of Object.entries(result) as Array<[string, unknown]>) {
    // Field lines of one name combine into one comma-separated value (RFC 9110 §5.3).
    const line = Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(', ') : value
    if (typeof line !== 'string') throw new Error(`expected the value of ${name} to be a string or a list of strings, got ${describe(value)}`)
    if ((DIGEST_FIELDS as readonly string[]).includes(name.toLowerCase())) throw new Error(`${name} is a digest field: the hook adds fields, it does not replace digests`)
    out.push([name, line])
  }
  return out
}

/** Call `hook`; `then` gets its checked fields, `fail` its failure (never both). Synchronous when the hook is. */
function run (
  hook: DigestFieldsHook, request: FastifyRequest, reply: FastifyReply, fields: DigestFieldValues,
  then: (added: Added) => void, fail: (err: Error) => void
): void {
  const settle = (result: AddedFields): void => {
    let added: Added
    try {
      added = addedFields(result)
    } catch (err) {
      fail(failure(err))
      return
    }
    then(added)
  }
  let result: AddedFields | Promise<AddedFields>
  try {
    result = hook(request, reply, Object.freeze(fields))
  } catch (err) {
    fail(failure(err))
    return
  }
  if (typeof (result as Promise<unknown> | null)?.then === 'function') (result as Promise<AddedFields>).then(settle, (err: unknown) => fail(failure(err)))
  else settle(result as AddedFields)
}

/**
 * The header section: the hook gets the digest headers set on the reply and
 * its fields are added as headers; no digest header, no call. On failure the
 * digests (of a payload that is not sent) go, and the error is the reply's.
 */
export function hookHeaders (hook: DigestFieldsHook, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done): void {
  const fields = headerFields(reply)
  if (fields === null) {
    done(null, payload)
    return
  }
  run(hook, request, reply, fields, (added) => {
    for (const [name, value] of added) reply.header(name, value)
    done(null, payload)
  }, (err) => {
    for (const name of DIGEST_FIELDS) reply.removeHeader(name)
    done(err)
  })
}

/** A digest trailer's callback, once its value is known (null: none): fastify's `done`. */
type TrailerDone = (err: Error | null, value?: string) => void

/**
 * The trailer section: fastify calls the digest trailers' callbacks together
 * once the content is sent (lib/reply.js sendTrailer); they wait here until
 * all are known, the hook is called with them (and any digest header), and
 * its fields join the trailers, passed to the raw response's addTrailers,
 * which fastify calls once (docs/design.md, "What this plugin relies on").
 * `Trailer` cannot announce them: RFC 9110 §6.6.2 recommends, not requires it.
 */
export class TrailerHook {
  private declared = 0
  private readonly values: Array<[DigestField, string | null, TrailerDone]> = []

  constructor (private readonly hook: DigestFieldsHook, private readonly request: FastifyRequest, private readonly reply: FastifyReply) {}

  declare (): void {
    this.declared++
  }

  /** The value of trailer `name` (null: none). */
  settle (name: DigestField, value: string | null, done: TrailerDone): void {
    this.values.push([name, value, done])
    if (this.values.length < this.declared) return
    const { reply, values } = this
    const fields: Fields = {}
    for (const [name, value] of values) if (value !== null) fields[name] = value
    const send = (): void => {
      for (const [name, value, done] of values) {
        if (value === null) done(new Error(`no ${name} value`))
        else done(null, value)
      }
    }
    if (Object.keys(fields).length === 0) {
      send()
      return
    }
    headerFields(reply, fields)
    run(this.hook, this.request, reply, fields, (added) => {
      const addTrailers = reply.raw.addTrailers
      if (added.length > 0) {
        reply.raw.addTrailers = function addTrailersWithAdded (this: RawResponse, trailers: Record<string, string>) {
          addTrailers.call(this, { ...trailers, ...Object.fromEntries(added) })
        } as RawResponse['addTrailers']
      }
      send()
    }, (err) => {
      reply.log.error({ err }, 'fastify-digest-fields: the onDigestFields hook failed on the trailers; the response was cut off')
      // With an error: an HTTP/2 stream is then reset with INTERNAL_ERROR.
      reply.raw.destroy(err)
    })
  }
}
