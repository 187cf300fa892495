// digestInterceptor(): an undici 7 interceptor for dispatcher.compose()
// (undici 7's interceptor API, `(dispatch) => (opts, handler) => boolean`;
// lib/dispatcher/dispatcher.js:20-44, compose(), wraps each interceptor's handler
// into the new handler API). Per request it adds the Want-*-Digest fields
// asked for in the options, `TE: trailers` under verify: 'required', and a
// Content-Digest for content whose bytes are fixed (a Blob or FormData body
// once hashed, asynchronously), and checks the response with a DigestHandler.
import type { Dispatcher } from 'undici'
import type { DigestInterceptorOptions } from '../../types/client'
import { digestFieldOf, parseDigestField, parseWantField } from '../core/fields'
import { DigestHandler } from './handler'
import { flatHeaders, getHeader, headerPairs, type HeaderValue, type Headers } from './headers'
import { normalizeClientOptions, type ClientParams } from './options'
import { knownBytes, prepareBody, type PreparedBody } from './request-digest'
import type { RequestFacts } from './response-check'

/** The first key of a request's digest or Want-* field, or null. */
function firstKey (name: string, value: string): string | null {
  try {
    const parsed = name.startsWith('want-') ? parseWantField(value) : parseDigestField(value)
    return parsed?.keys().next().value ?? null
  } catch {
    return null
  }
}

const FACT_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['repr-digest', 'Repr-Digest'],
  ['content-digest', 'Content-Digest'],
  ['unencoded-digest', 'Unencoded-Digest'],
  ['want-repr-digest', 'Want-Repr-Digest'],
  ['want-content-digest', 'Want-Content-Digest'],
  ['want-unencoded-digest', 'Want-Unencoded-Digest']
]

function requestFacts (method: string, pairs: ReadonlyArray<readonly [string, HeaderValue]>): RequestFacts {
  const te = getHeader(pairs, 'te') ?? ''
  let digestField: string | null = null
  let digestAlgorithm: string | null = null
  for (const [name, field] of FACT_FIELDS) {
    const value = getHeader(pairs, name)
    if (value === undefined) continue
    digestField = field
    digestAlgorithm = firstKey(name, value)
    break
  }
  return { method, trailers: /(^|,)\s*trailers\s*(;|,|$)/i.test(te), digestField, digestAlgorithm }
}

/** The request's headers with the Want-*-Digest fields asked for in the options. */
function withWants (params: ClientParams, opts: Dispatcher.DispatchOptions): Array<[string, HeaderValue]> {
  const pairs = headerPairs(opts.headers as Headers)
  if (params.wantContent !== null && getHeader(pairs, 'want-content-digest') === undefined) {
    pairs.push(['want-content-digest', params.wantContent])
  }
  if (params.wantRepr !== null && getHeader(pairs, 'want-repr-digest') === undefined) {
    pairs.push(['want-repr-digest', params.wantRepr])
  }
  if (params.wantUnencoded !== null && getHeader(pairs, 'want-unencoded-digest') === undefined) {
    pairs.push(['want-unencoded-digest', params.wantUnencoded])
  }
  return pairs
}

/**
 * Under verify: 'required', `TE: trailers` unless the caller sent a TE field.
 * A server may send a streamed body's digests only as trailers, and only to a
 * client that said it reads them (RFC 9110 §6.5.1, §10.1.4): the plugin's
 * streams over its maxBufferSize carry no digest otherwise. HTTP/2 allows TE
 * with "trailers" only (RFC 9113 §8.2.2), the one value sent here. The
 * "TE" connection option RFC 9110 §10.1.4 pairs it with cannot be sent:
 * undici writes the Connection field itself (HTTP/1.1) and HTTP/2 has none.
 */
function askTrailers (params: ClientParams, pairs: Array<[string, HeaderValue]>): void {
  if (params.verify === 'required' && getHeader(pairs, 'te') === undefined) pairs.push(['te', 'trailers'])
}

/** The pairs with a prepared body's Content-Digest, and its Content-Type in place of any given. */
function withPrepared (pairs: Array<[string, HeaderValue]>, prepared: PreparedBody): Array<[string, HeaderValue]> {
  const out = prepared.contentType === null ? pairs : pairs.filter(([name]) => name.toLowerCase() !== 'content-type')
  if (prepared.contentType !== null) out.push(['content-type', prepared.contentType])
  out.push(['content-digest', prepared.field])
  return out
}

/**
 * An interceptor checking the digest fields of every response (options
 * validated here, once; FST_DIGEST_INVALID_OPTION on a bad one):
 * `new Agent().compose(digestInterceptor({ verify: 'required' }))`.
 */
export function digestInterceptor (options?: DigestInterceptorOptions): Dispatcher.DispatcherComposeInterceptor {
  const params = normalizeClientOptions(options)
  return (dispatch) => function digestDispatch (opts, handler) {
    const pairs = withWants(params, opts)
    askTrailers(params, pairs)
    const send = (fields: Array<[string, HeaderValue]>, body: unknown): boolean => {
      const method = (opts.method ?? 'GET').toUpperCase()
      const next = new DigestHandler(handler, params, requestFacts(method, fields))
      return dispatch({ ...opts, body: body as Dispatcher.DispatchOptions['body'], headers: flatHeaders(fields) as string[] }, next)
    }
    // A Content-Digest the caller gives is kept, and the body sent as it is.
    if (getHeader(pairs, 'content-digest') !== undefined) return send(pairs, opts.body)
    const algorithm = params.algorithms.slice(0, 1)
    const bytes = knownBytes(opts.body)
    if (bytes !== null) {
      pairs.push(['content-digest', digestFieldOf(algorithm, bytes, true) as string])
      return send(pairs, opts.body)
    }
    const signal = (opts as { signal?: { aborted?: unknown } | null }).signal
    const prepared = prepareBody(opts.body, algorithm, signal)
    if (prepared === null) return send(pairs, opts.body)
    // A Blob or FormData is hashed before the request goes out; its errors
    // (a file-backed Blob whose file changed) fail the request, as undici's
    // own asynchronous interceptors do (lib/interceptor/dns.js: the lookup's
    // error goes to onResponseError before any request started).
    const fail = (err: Error): void => handler.onResponseError?.(null as never, err)
    prepared.then((body) => {
      try {
        // Aborted while hashing: undici aborts it before anything is sent.
        if (body === null) send(pairs, opts.body)
        else send(withPrepared(pairs, body), body.body)
      } catch (err) {
        fail(err as Error)
      }
    }, fail)
    return true
  }
}
