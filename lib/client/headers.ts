// Request headers in the forms undici's dispatch options take them: a flat
// [name, value, …] array, an iterable of pairs, or an object (undici 7.30.2
// lib/core/request.js:196-218); read case-insensitively, written back flat.
export type HeaderValue = string | string[] | number | undefined | null
export type Headers = Record<string, HeaderValue> | Iterable<readonly [string, HeaderValue]> | readonly unknown[] | null | undefined
export type Pairs = Array<[string, HeaderValue]>

/** The request's header fields as [name, value] pairs, names as given. */
export function headerPairs (headers: Headers): Pairs {
  if (headers == null) return []
  if (Array.isArray(headers)) {
    const out: Pairs = []
    for (let i = 0; i + 1 < headers.length; i += 2) out.push([String(headers[i]), headers[i + 1] as HeaderValue])
    return out
  }
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

/** A response field from undici's parsed headers (lowercase names; string or string[] values). */
export function responseField (headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}
