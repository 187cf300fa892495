// digestInterceptor(): an undici 7 and 8 interceptor (lib/dispatcher/dispatcher.js compose) adding
// Want-*-Digest, `TE: trailers`
// and Content-Digest to a request, its response checked by a DigestHandler. Headers: lib/core/request.js:196-218.
import type { Dispatcher } from 'undici'
import type { DigestInterceptorOptions } from '../../types/client'
import { digestFieldOf } from '../core/fields'
import { normalizeClientOptions } from './client-options'
import { DigestHandler } from './handler'
import { blobDigest, blobOf, knownBytes } from './request-digest'

type Pairs = Array<[string, string | string[]]>

/** The request's header fields as [name, value] pairs: names as given, absent values dropped. */
export function headerPairs (headers: unknown): Pairs {
  if (headers == null) return []
  const entries: Array<[unknown, unknown]> = Array.isArray(headers)
    ? Array.from({ length: headers.length >> 1 }, (_, i) => [headers[2 * i], headers[2 * i + 1]])
    : Array.from(typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function'
      ? headers as Iterable<[unknown, unknown]>
      : Object.entries(headers))
  return entries.filter(([, value]) => value != null)
    .map(([name, value]) => [String(name), Array.isArray(value) ? value : String(value)])
}

/** Each field's value by lowercase name, several lines joined with ", " (RFC 9110 §5.3), in one pass. */
export function fieldValues (pairs: Pairs): Map<string, string> {
  const values = new Map<string, string>()
  for (const [name, value] of pairs) {
    if (value.length === 0 && Array.isArray(value)) continue // no field line
    const key = name.toLowerCase()
    const line = Array.isArray(value) ? value.join(', ') : value
    const before = values.get(key)
    values.set(key, before === undefined ? line : `${before}, ${line}`)
  }
  return values
}

/** `new Agent().compose(digestInterceptor({ verify: 'required' }))`; options validated here, once. */
export function digestInterceptor (options?: DigestInterceptorOptions): Dispatcher.DispatcherComposeInterceptor {
  const params = normalizeClientOptions(options)
  const algorithm = params.algorithms.slice(0, 1)
  // The Want-* fields asked for, and under verify: 'required' `TE: trailers`: trailers go only to
  // a client that reads them (RFC 9110 §6.5.1, §10.1.4; the one TE HTTP/2 allows, RFC 9113 §8.2.2).
  const added = params.verify === 'required' ? [...params.want, ['te', 'trailers'] as [string, string]] : params.want
  return (dispatch) => function digestDispatch (opts, handler) {
    let pairs = headerPairs(opts.headers)
    // The fields by lowercase name, kept in step with `pairs`: read once, for what is added and for the response's
    // check.
    const given = fieldValues(pairs)
    for (const [name, value] of added) {
      if (given.has(name)) continue
      pairs.push([name, value])
      given.set(name, value)
    }
    const send = (body: unknown, contentDigest: string | null = null): boolean => {
      if (contentDigest !== null) {
        pairs.push(['content-digest', contentDigest])
        given.set('content-digest', contentDigest)
      }
      const next = new DigestHandler(handler, params, (opts.method ?? 'GET').toUpperCase(), given)
      const sent = { ...opts, body: body as Dispatcher.DispatchOptions['body'], headers: pairs.flat() as string[] }
      return dispatch(sent, next)
    }
    const body: unknown = opts.body
    // A Content-Digest the caller gives is kept, and the body sent as it is.
    if (given.has('content-digest')) return send(body)
    const bytes = knownBytes(body)
    if (bytes !== null) return send(body, digestFieldOf(algorithm, bytes, true) as string)
    const blob = blobOf(body)
    if (blob === null) return send(body)
    // A Blob or FormData is hashed first, and sent even once the signal aborted the hashing, for undici to abort
    // (undici 8 refuses a FormData not its own before it looks at the signal: lib/core/request.js,
    // isUndiciFormData); an error fails the request as in undici's lib/interceptor/dns.js.
    blobDigest(blob, algorithm, (opts as { signal?: { aborted?: unknown } | null }).signal).then((field) => {
      // A FormData's Content-Type (with the boundary) replaces any given.
      if (blob !== body) {
        pairs = pairs.filter(([name]) => name.toLowerCase() !== 'content-type')
        pairs.push(['content-type', blob.type])
      }
      send(blob, field)
    }).catch((err: Error) => handler.onResponseError?.(null as never, err))
    return true
  }
}
