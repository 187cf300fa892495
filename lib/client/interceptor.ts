// digestInterceptor(): an undici 7 interceptor for dispatcher.compose()
// (undici 7's interceptor API, `(dispatch) => (opts, handler) => boolean`;
// lib/dispatcher/dispatcher.js:20-44, compose(), wraps each interceptor's handler
// into the new handler API). Per request it adds the Want-*-Digest fields
// asked for in the options and a Content-Digest for content known up front,
// and checks the response with a DigestHandler.
import type { Dispatcher } from 'undici'
import type { DigestInterceptorOptions } from '../../types/client'
import { digestFieldOf, parseDigestField, parseWantField } from '../fields'
import { DigestHandler } from './handler'
import { flatHeaders, getHeader, headerPairs, type HeaderValue, type Headers } from './headers'
import { normalizeClientOptions, type ClientParams } from './options'
import { knownBytes } from './request-digest'
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
  ['want-repr-digest', 'Want-Repr-Digest'],
  ['want-content-digest', 'Want-Content-Digest']
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

/** The request's headers with the fields this interceptor adds. */
function withFields (params: ClientParams, opts: Dispatcher.DispatchOptions): Array<[string, HeaderValue]> {
  const pairs = headerPairs(opts.headers as Headers)
  if (params.wantContent !== null && getHeader(pairs, 'want-content-digest') === undefined) {
    pairs.push(['want-content-digest', params.wantContent])
  }
  if (params.wantRepr !== null && getHeader(pairs, 'want-repr-digest') === undefined) {
    pairs.push(['want-repr-digest', params.wantRepr])
  }
  const bytes = knownBytes(opts.body)
  if (bytes !== null && getHeader(pairs, 'content-digest') === undefined) {
    pairs.push(['content-digest', digestFieldOf(params.algorithms.slice(0, 1), bytes, true) as string])
  }
  return pairs
}

/**
 * An interceptor checking the digest fields of every response (options
 * validated here, once; FST_DIGEST_INVALID_OPTION on a bad one):
 * `new Agent().compose(digestInterceptor({ verify: 'required' }))`.
 */
export function digestInterceptor (options?: DigestInterceptorOptions): Dispatcher.DispatcherComposeInterceptor {
  const params = normalizeClientOptions(options)
  return (dispatch) => function digestDispatch (opts, handler) {
    const pairs = withFields(params, opts)
    const method = (opts.method ?? 'GET').toUpperCase()
    return dispatch({ ...opts, headers: flatHeaders(pairs) as string[] }, new DigestHandler(handler, params, requestFacts(method, pairs)))
  }
}
