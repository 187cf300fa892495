// Request headers as undici's dispatch options carry them: a flat array
// [name, value, …], an iterable of [name, value] pairs, or an object
// (undici 7.30.2, lib/core/request.js:196-218, the Request constructor's
// header loop).
// Read case-insensitively, and rewritten as a flat array with fields added.

export type HeaderValue = string | string[] | number | undefined | null
export type Headers = Record<string, HeaderValue> | Iterable<readonly [string, HeaderValue]> | readonly unknown[] | null | undefined

/** The request's header fields as [name, value] pairs, names as given. */
export function headerPairs (headers: Headers): Array<[string, HeaderValue]> {
  const out: Array<[string, HeaderValue]> = []
  if (headers == null) return out
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) out.push([String(headers[i]), headers[i + 1] as HeaderValue])
    return out
  }
  if (typeof (headers as Iterable<unknown>)[Symbol.iterator] === 'function') {
    for (const [name, value] of headers as Iterable<readonly [string, HeaderValue]>) out.push([name, value])
    return out
  }
  for (const [name, value] of Object.entries(headers as Record<string, HeaderValue>)) out.push([name, value])
  return out
}

/** A field's value (several lines joined with ", "), or undefined when absent. */
export function getHeader (pairs: ReadonlyArray<readonly [string, HeaderValue]>, name: string): string | undefined {
  let out: string | undefined
  for (const [key, value] of pairs) {
    if (value == null || key.toLowerCase() !== name) continue
    const text = Array.isArray(value) ? value.join(', ') : String(value)
    out = out === undefined ? text : `${out}, ${text}`
  }
  return out
}

/** The pairs as the flat array undici accepts, array values kept as field lines. */
export function flatHeaders (pairs: ReadonlyArray<readonly [string, HeaderValue]>): unknown[] {
  const out: unknown[] = []
  for (const [name, value] of pairs) {
    if (value == null) continue
    out.push(name, Array.isArray(value) ? value : String(value))
  }
  return out
}

/** A response field from undici's parsed headers (lowercase names; string or string[] values). */
export function responseField (headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value.join(', ') : value
}
