// The onDigestFields option (docs/design.md, "Signing responses"): a hook
// called once a response's digest fields are final and before they are
// written, whose fields are added in the same section. A signer (RFC 9421)
// needs exactly this: a signature covering Content-Digest protects the
// content only when it is computed from the digest that is sent.
//
// A hook that fails never lets the response go out as if it had run:
// * headers: the error goes to fastify's error handling (an onSend hook's
//   error, fastify lib/hooks.js onSendHookRunner → lib/reply.js
//   wrapOnSendEnd → onErrorHook), so the reply is the error handler's;
// * trailers: the content has gone out; the response is cut off (HTTP/1.1:
//   no last chunk, RFC 9112 §7.1; HTTP/2: RST_STREAM, RFC 9113 §8.1), as a
//   file that changed while sent is (lib/plugin/response/representation.ts).
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AddedFields, DigestFieldValues, DigestFieldsHook } from '../../../types/index'
import { FST_DIGEST_FIELD_HOOK_FAILED } from '../../core/errors'
import { describe } from '../../core/option-checks'
import type { Payload } from './reply-state'

type Done = (err: Error | null, payload?: Payload) => void
type RawResponse = ServerResponse | Http2ServerResponse
type Fields = Partial<Record<DigestFieldName, string>>
type DigestFieldName = 'content-digest' | 'repr-digest' | 'unencoded-digest'

const DIGEST_FIELDS: readonly DigestFieldName[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/** The digest fields set as headers on `reply`, or null when there is none. */
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

/**
 * The hook's fields, checked: an object of strings, naming no digest field
 * (the hook adds fields; the digests it was given are the ones sent).
 */
function addedFields (result: AddedFields): Array<[string, string]> {
  if (result === undefined || result === null) return []
  if (typeof result !== 'object') throw new Error(`expected an object of fields or nothing, got ${describe(result)}`)
  const out: Array<[string, string]> = []
  for (const [name, value] of Object.entries(result) as Array<[string, unknown]>) {
    // Field lines of one name combine into one comma-separated value (RFC 9110 §5.3).
    const line = Array.isArray(value) && value.every((v) => typeof v === 'string') ? value.join(', ') : value
    if (typeof line !== 'string') throw new Error(`expected the value of ${name} to be a string or a list of strings, got ${describe(value)}`)
    if ((DIGEST_FIELDS as readonly string[]).includes(name.toLowerCase())) throw new Error(`${name} is a digest field: the hook adds fields, it does not replace digests`)
    out.push([name, line])
  }
  return out
}

function isPromise (value: unknown): value is Promise<AddedFields> {
  return typeof (value as Promise<unknown> | null)?.then === 'function'
}

/** Call `hook`; `then` receives its fields, `fail` its failure (never both). */
function run (
  hook: DigestFieldsHook, request: FastifyRequest, reply: FastifyReply, fields: DigestFieldValues,
  then: (added: Array<[string, string]>) => void, fail: (err: Error) => void
): void {
  const settle = (result: AddedFields): void => {
    let added: Array<[string, string]>
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
  if (isPromise(result)) result.then(settle, (err: unknown) => fail(failure(err)))
  else settle(result)
}

/**
 * The header section: call the hook with the digest headers set on the
 * reply and add its fields as headers; no digest header, no call. A failure
 * is the reply's error (`done(err)`). No closure on the synchronous path:
 * this runs for every signed response.
 */
export function hookHeaders (
  hook: DigestFieldsHook, request: FastifyRequest, reply: FastifyReply, payload: Payload, done: Done
): void {
  const fields = headerFields(reply)
  if (fields === null) {
    done(null, payload)
    return
  }
  let result: AddedFields | Promise<AddedFields>
  try {
    result = hook(request, reply, Object.freeze(fields))
  } catch (err) {
    headersFailed(reply, err, done)
    return
  }
  if (isPromise(result)) {
    result.then((r) => { headersAdded(reply, r, payload, done) }, (err: unknown) => { headersFailed(reply, err, done) })
  } else {
    headersAdded(reply, result, payload, done)
  }
}

function headersAdded (reply: FastifyReply, result: AddedFields, payload: Payload, done: Done): void {
  let added: Array<[string, string]>
  try {
    added = addedFields(result)
  } catch (err) {
    headersFailed(reply, err, done)
    return
  }
  for (const [name, value] of added) reply.header(name, value)
  done(null, payload)
}

function headersFailed (reply: FastifyReply, err: unknown, done: Done): void {
  // They are the digests of a payload that is not sent: the error's answer
  // gets its own, or none when fastify's last resort writes it
  // (lib/error-handler.js fallbackErrorHandler: the reply's headers as set).
  for (const name of DIGEST_FIELDS) reply.removeHeader(name)
  done(failure(err))
}

/** `addTrailers` adding `extra` to the trailers it is given (HTTP/1.1's replaces what an earlier call added). */
function withAdded (addTrailers: RawResponse['addTrailers'], extra: Array<[string, string]>): RawResponse['addTrailers'] {
  return function addTrailersWithAdded (this: RawResponse, trailers: Record<string, string>) {
    addTrailers.call(this, { ...trailers, ...Object.fromEntries(extra) })
  } as RawResponse['addTrailers']
}

/** A digest trailer's callback, once its value is known (null: none): fastify's `done`. */
type TrailerDone = (err: Error | null, value?: string) => void

/**
 * The trailer section: the digest trailers' callbacks, which fastify calls
 * together once the content has been sent (lib/reply.js sendTrailer), wait
 * here until all are known; the hook is then called with them (and any digest
 * field sent as a header), and its fields are added to the trailers. They go
 * out though `Trailer` could not announce them: RFC 9110 §6.6.2 recommends
 * announcing trailers, it does not require it.
 */
export class TrailerHook {
  private declared = 0
  private readonly values: Array<[DigestFieldName, string | null, TrailerDone]> = []

  constructor (
    private readonly hook: DigestFieldsHook,
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply
  ) {}

  /** A digest trailer was declared: its value is waited for. */
  declare (): void {
    this.declared++
  }

  /** The value of trailer `name` (null: none). */
  settle (name: DigestFieldName, value: string | null, done: TrailerDone): void {
    this.values.push([name, value, done])
    if (this.values.length === this.declared) this.release()
  }

  private release (): void {
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
      const raw = reply.raw
      if (added.length > 0) raw.addTrailers = withAdded(raw.addTrailers, added)
      send()
    }, (err) => {
      reply.log.error({ err }, 'fastify-digest-fields: the onDigestFields hook failed on the trailers; the response was cut off')
      // With an error: an HTTP/2 stream is then reset with INTERNAL_ERROR.
      reply.raw.destroy(err)
    })
  }
}
