// Live streams (event streams, JSON lines, a camera's frames) are consumed
// as they arrive: a response of one is never held back for a digest. Which
// responses are live: the route's `live` option, else the media type of the
// response's Content-Type matched by `liveTypes`, parameters ignored: a
// media type, a `type/*` range, or `*/*` for every stream (RFC 9110 §12.5.1).

/** The media type of a Content-Type value, lowercase, without parameters (RFC 9110 §8.3.1). */
function mediaTypeOf (contentType: unknown): string {
  const value = Array.isArray(contentType) ? contentType[0] : contentType
  if (typeof value !== 'string') return ''
  const semicolon = value.indexOf(';')
  return (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase()
}

/** Whether a streamed response is live: `live` when the route set it, else by its media type. */
export function isLiveStream (live: boolean | null, liveTypes: ReadonlySet<string>, contentType: unknown): boolean {
  if (live !== null) return live
  if (liveTypes.size === 0) return false
  const type = mediaTypeOf(contentType)
  if (liveTypes.has(type) || liveTypes.has('*/*')) return true
  const slash = type.indexOf('/')
  return slash > 0 && liveTypes.has(`${type.slice(0, slash)}/*`)
}
