// digestInterceptor(): an undici 7 interceptor (lib/dispatcher/dispatcher.js:20-44) adding Want-*-Digest, `TE: trailers`
// and Content-Digest to a request, its response checked by a DigestHandler. Headers: lib/core/request.js:196-218.
import type { Dispatcher } from 'undici'
import type { DigestAlgorithm, DigestInterceptorOptions } from '../../types/client'
import { FST_DIGEST_INVALID_OPTION } from '../core/errors'
import { digestFieldOf, parseDigestField, parseWantField, serializeWantField } from '../core/fields'
import { checkAlgorithms, checkBoolean, checkCount, describe, oneOf, unknownKey } from '../core/option-checks'
import { DigestHandler } from './handler'
import { knownBytes, prepareBody, type PreparedBody } from './request-digest'
import type { RequestFacts } from './response-check'

/** The options, checked once (the plugin's names and defaults where they mean the same); want*: the Want-* values to send, or null. */
export type ClientParams = ReturnType<typeof normalizeClientOptions>

export const defaultMaxDecodedSize = 64 * 1024 * 1024

const optionKeys: Readonly<Record<keyof DigestInterceptorOptions, true>> = {
  algorithms: true, verify: true, strict: true, reprDigest: true, want: true, maxDecodedSize: true
}
const keys = Object.keys(optionKeys)
const WANT_KEYS = ['content', 'repr', 'unencoded']

const fail = (name: string, reason: string): Error => new FST_DIGEST_INVALID_OPTION(name, reason)
const checkVerify = oneOf<'if-present' | 'required'>('if-present', 'required')
const checkReprDigest = oneOf<'either' | 'decoded' | 'coded'>('either', 'decoded', 'coded')
const checkBytes = checkCount('bytes')

/** An accepted algorithm or a list of 1 to 10 as a Want-* value: weights 10, 9, … (RFC 9530 §4). */
function wantValue (value: unknown, name: string, enabled: readonly DigestAlgorithm[]): string | null {
  if (value === undefined) return null
  const list: unknown[] = Array.isArray(value) ? value : [value]
  if (list.length === 0 || list.length > 10) throw fail(name, `expected 1 to 10 algorithms, got ${list.length}`)
  list.forEach((key, i) => {
    if (typeof key !== 'string' || !enabled.includes(key as DigestAlgorithm)) {
      throw fail(name, `expected algorithms among the accepted ones (${enabled.join(', ')}), got ${describe(key)}`)
    }
    if (list.indexOf(key) !== i) throw fail(name, `${describe(key)} is listed twice`)
  })
  return serializeWantField(list.map((key, i) => [key as string, 10 - i]))
}

// An algorithm or a list asks for Content-Digest and Repr-Digest (docs/design.md, "The client"); the object, per field.
function checkWant (value: unknown, enabled: readonly DigestAlgorithm[]): Array<string | null> {
  if (value === undefined) return [null, null, null]
  if (typeof value === 'string' || Array.isArray(value)) return [...Array(2).fill(wantValue(value, 'want', enabled)), null]
  if (value === null || typeof value !== 'object') {
    throw fail('want', `expected an algorithm, a list of them or { content, repr, unencoded }, got ${describe(value)}`)
  }
  const unknown = Object.keys(value).find((key) => !WANT_KEYS.includes(key))
  if (unknown !== undefined) throw fail(`want.${unknown}`, `unknown key (want keys: ${WANT_KEYS.join(', ')})`)
  return WANT_KEYS.map((key) => wantValue((value as Record<string, unknown>)[key], `want.${key}`, enabled))
}

/** Validate and freeze the options; throws FST_DIGEST_INVALID_OPTION naming the option. */
export function normalizeClientOptions (opts: DigestInterceptorOptions = {}) {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw fail('options', `expected an object, got ${describe(opts)}`)
  const unknown = Object.keys(opts).find((key) => !Object.hasOwn(optionKeys, key))
  if (unknown !== undefined) throw fail(unknown, unknownKey(unknown, keys))
  const algorithms = checkAlgorithms(opts.algorithms, fail)
  const { verify = 'if-present', strict = false, maxDecodedSize = defaultMaxDecodedSize } = opts
  checkVerify(verify, 'verify', fail, null)
  checkBoolean(strict, 'strict', fail, null)
  const reprDigest = checkReprDigest(opts.reprDigest ?? (strict ? 'coded' : 'either'), 'reprDigest', fail, null)
  // Strict mode is RFC 9530 §3 to the letter: the content coding is part of the representation.
  if (strict && reprDigest !== 'coded') {
    throw fail('reprDigest', `strict: true reads a coded Repr-Digest over the coded bytes only, got ${describe(reprDigest)}`)
  }
  checkBytes(maxDecodedSize, 'maxDecodedSize', fail, null)
  const [wantContent, wantRepr, wantUnencoded] = checkWant(opts.want, algorithms) as [string | null, string | null, string | null]
  return Object.freeze({ algorithms, verify, strict, reprDigest, wantContent, wantRepr, wantUnencoded, maxDecodedSize })
}

type HeaderValue = string | string[] | number | undefined | null
type Pairs = Array<[string, HeaderValue]>

/** The request's header fields as [name, value] pairs, names as given. */
export function headerPairs (headers: unknown): Pairs {
  if (headers == null) return []
  if (Array.isArray(headers)) return Array.from({ length: headers.length >> 1 }, (_, i) => [String(headers[2 * i]), headers[2 * i + 1] as HeaderValue])
  const iterable = typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
  return Array.from(iterable ? headers as Iterable<[string, HeaderValue]> : Object.entries(headers), ([name, value]) => [name, value])
}

/** A field's value (several lines joined with ", "), or undefined when absent. */
export function getHeader (pairs: Pairs, name: string): string | undefined {
  const values = pairs.filter(([key, value]) => value != null && key.toLowerCase() === name).map(([, value]) => Array.isArray(value) ? value.join(', ') : String(value))
  return values.length === 0 ? undefined : values.join(', ')
}

/** The pairs as the flat array undici takes, array values kept as field lines. */
export function flatHeaders (pairs: Pairs): unknown[] {
  return pairs.filter(([, value]) => value != null).flatMap(([name, value]) => [name, Array.isArray(value) ? value : String(value)])
}

// The request's fields a 406 or a digest problem may be about, in this order.
const FACT_FIELDS = ['Repr-Digest', 'Content-Digest', 'Unencoded-Digest', 'Want-Repr-Digest', 'Want-Content-Digest', 'Want-Unencoded-Digest']

function requestFacts (method: string, pairs: Pairs): RequestFacts {
  const trailers = /(^|,)\s*trailers\s*(;|,|$)/i.test(getHeader(pairs, 'te') ?? '')
  for (const field of FACT_FIELDS) {
    const value = getHeader(pairs, field.toLowerCase())
    if (value === undefined) continue
    let algorithm: string | null = null
    try {
      algorithm = (field.startsWith('Want-') ? parseWantField(value) : parseDigestField(value))?.keys().next().value ?? null
    } catch {}
    return { method, trailers, digestField: field, digestAlgorithm: algorithm }
  }
  return { method, trailers, digestField: null, digestAlgorithm: null }
}

/** The pairs with a prepared body's Content-Digest, and its Content-Type in place of any given. */
function withPrepared (pairs: Pairs, { contentType, field }: PreparedBody): Pairs {
  const out = contentType === null ? pairs : [...pairs.filter(([name]) => name.toLowerCase() !== 'content-type'), ['content-type', contentType] as [string, string]]
  return [...out, ['content-digest', field]]
}

/** `new Agent().compose(digestInterceptor({ verify: 'required' }))`; options validated here, once. */
export function digestInterceptor (options?: DigestInterceptorOptions): Dispatcher.DispatcherComposeInterceptor {
  const params = normalizeClientOptions(options)
  const algorithm = params.algorithms.slice(0, 1)
  // The Want-* fields asked for, and under verify: 'required' `TE: trailers`: trailers go only to
  // a client that reads them (RFC 9110 §6.5.1, §10.1.4; the one TE HTTP/2 allows, RFC 9113 §8.2.2).
  const wanted: Array<[string, string | null]> = [
    ['want-content-digest', params.wantContent], ['want-repr-digest', params.wantRepr], ['want-unencoded-digest', params.wantUnencoded],
    ['te', params.verify === 'required' ? 'trailers' : null]
  ]
  const added = wanted.filter((pair): pair is [string, string] => pair[1] !== null)
  return (dispatch) => function digestDispatch (opts, handler) {
    const pairs = headerPairs(opts.headers)
    for (const [name, value] of added) if (getHeader(pairs, name) === undefined) pairs.push([name, value])
    const send = (fields: Pairs, body: unknown): boolean => {
      const next = new DigestHandler(handler, params, requestFacts((opts.method ?? 'GET').toUpperCase(), fields))
      return dispatch({ ...opts, body: body as Dispatcher.DispatchOptions['body'], headers: flatHeaders(fields) as string[] }, next)
    }
    // A Content-Digest the caller gives is kept, and the body sent as it is.
    if (getHeader(pairs, 'content-digest') !== undefined) return send(pairs, opts.body)
    const bytes = knownBytes(opts.body)
    if (bytes !== null) return send([...pairs, ['content-digest', digestFieldOf(algorithm, bytes, true) as string]], opts.body)
    const prepared = prepareBody(opts.body, algorithm, (opts as { signal?: { aborted?: unknown } | null }).signal)
    if (prepared === null) return send(pairs, opts.body)
    // A Blob or FormData is hashed first; an error fails the request as in undici's lib/interceptor/dns.js.
    const fail = (err: Error): void => handler.onResponseError?.(null as never, err)
    prepared.then((body) => {
      try {
        // Aborted while hashing (null): passed on as it is, for undici to abort.
        if (body === null) send(pairs, opts.body)
        else send(withPrepared(pairs, body), body.body)
      } catch (err) {
        fail(err as Error)
      }
    }, fail)
    return true
  }
}
