// Cache-Control's no-transform (RFC 9111 §5.2.2.6, §5.2.1.6): an intermediary must not transform the content
// (RFC 9110 §7.7), such as compressing it, which would leave a digest of the content as sent wrong.

/**
 * Whether a directive of a Cache-Control value is named no-transform, in any case: a comma outside a quoted string
 * ends one (RFC 9111 §5.2; RFC 9110 §5.6.4: in a quoted string, a backslash quotes the next character).
 */
function hasNoTransform (value: string): boolean {
  let start = 0
  let quoted = false
  for (let i = 0; i <= value.length; i++) {
    const c = value[i]
    if (quoted && c === '\\') i++
    else if (c === '"') quoted = !quoted
    else if (i === value.length || (c === ',' && !quoted)) {
      if ((value.slice(start, i).split('=', 1)[0] as string).trim().toLowerCase() === 'no-transform') return true
      start = i + 1
    }
  }
  return false
}

/**
 * The Cache-Control value with no-transform added to `current` (the directives already there kept), or null when
 * it has it already.
 */
export function withNoTransform (current: string | readonly string[] | number | undefined): string | null {
  if (current === undefined) return 'no-transform'
  const value = Array.isArray(current) ? current.join(', ') : String(current)
  if (hasNoTransform(value)) return null
  return value.trim() === '' ? 'no-transform' : `${value}, no-transform`
}
