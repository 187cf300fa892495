// Which members of a Structured Field Dictionary have a Decimal as their value.
//
// RFC 8941 keeps Integers and Decimals apart: sf-integer is
// `["-"] 1*15DIGIT` (§3.3.1), sf-decimal is `["-"] 1*12DIGIT "." 1*3DIGIT`
// (§3.3.2), and §4.2.4 makes any number with a "." a Decimal. So `10.0` is a
// Decimal, not the Integer 10, and a field that requires an Integer does not
// parse with it. structured-headers 2.1 returns a JS number for both types
// (`parseIntegerOrDecimal` ends in `parseInt` or `parseFloat`), and its Parser
// class is not exported (its index re-exports parser.js with `export *`,
// which leaves the default export out, and the package's `exports` map
// offers no other entry). So the type is read back from the field text here.
//
// This is a scanner over a value that structured-headers has already parsed
// as a Dictionary, so it does not validate anything: it follows the grammar
// (RFC 8941 §3.2, §4.2.2 for the Dictionary, §4.2.3 for items and
// parameters, §4.2.5–§4.2.7 and RFC 9651 §4.2.10 for the bare items that can
// hold a "." or a delimiter) only far enough to find where each member value
// starts and ends. A "." also occurs in keys, Tokens, Strings, Display
// Strings and in the parameters and Inner Lists of a member; only a bare
// item that starts like a number (`-` or a digit) is a Decimal. On a value
// that is not a Dictionary it still ends, with an unspecified result.

const SP = 0x20
const HTAB = 0x09
const DQUOTE = 0x22
const PERCENT = 0x25
const OPEN = 0x28
const CLOSE = 0x29
const COMMA = 0x2c
const MINUS = 0x2d
const DOT = 0x2e
const COLON = 0x3a
const SEMICOLON = 0x3b
const EQUALS = 0x3d
const BACKSLASH = 0x5c

// key = ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )  (RFC 8941 §3.1.2)
function isKeyChar (code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) ||
    code === 0x5f || code === MINUS || code === DOT || code === 0x2a
}

function isDigit (code: number): boolean {
  return code >= 0x30 && code <= 0x39
}

// The characters that end an Integer, Decimal, Token, Boolean or Date: none
// of them can contain one (tchar, ":" and "/" for Tokens, RFC 8941 §3.3.4).
function endsPlainItem (code: number): boolean {
  return code === SEMICOLON || code === COMMA || code === SP || code === HTAB || code === OPEN || code === CLOSE
}

function skipSpaces (text: string, pos: number): number {
  while (pos < text.length && (text.charCodeAt(pos) === SP || text.charCodeAt(pos) === HTAB)) pos++
  return pos
}

/** Past the closing character `code` searched from `from`, or the end. */
function past (text: string, code: number, from: number): number {
  const at = text.indexOf(String.fromCharCode(code), from)
  return at === -1 ? text.length : at + 1
}

/** The end of the bare item starting at `pos`. */
function skipBareItem (text: string, pos: number): number {
  const code = text.charCodeAt(pos)
  if (code === DQUOTE) {
    // String (§4.2.5): `\` escapes the next character; the first unescaped DQUOTE ends it.
    let p = pos + 1
    while (p < text.length) {
      const c = text.charCodeAt(p)
      if (c === DQUOTE) return p + 1
      p += c === BACKSLASH ? 2 : 1
    }
    return text.length
  }
  // Display String (RFC 9651 §4.2.10): `%"`, then no unescaped DQUOTE (it is %22).
  if (code === PERCENT) return past(text, DQUOTE, pos + 2)
  // Byte Sequence (§4.2.7): base64 between colons.
  if (code === COLON) return past(text, COLON, pos + 1)
  let p = pos
  while (p < text.length && !endsPlainItem(text.charCodeAt(p))) p++
  return p
}

/** The end of the parameters starting at `pos` (none: `pos`). */
function skipParameters (text: string, pos: number): number {
  while (text.charCodeAt(pos) === SEMICOLON) {
    pos = skipSpaces(text, pos + 1)
    while (pos < text.length && isKeyChar(text.charCodeAt(pos))) pos++
    if (text.charCodeAt(pos) === EQUALS) pos = skipBareItem(text, pos + 1)
  }
  return pos
}

/** The end of the Inner List starting at `pos` (its `(`), before its parameters. */
function skipInnerList (text: string, pos: number): number {
  pos++
  for (;;) {
    pos = skipSpaces(text, pos)
    if (pos >= text.length) return pos
    if (text.charCodeAt(pos) === CLOSE) return pos + 1
    const next = skipParameters(text, skipBareItem(text, pos))
    if (next === pos) return text.length // no item here: not a Dictionary
    pos = next
  }
}

/** Whether the bare item text[start, end) is a Decimal: a number (§4.2.4) with a ".". */
function isDecimal (text: string, start: number, end: number): boolean {
  const first = text.charCodeAt(start)
  if (first !== MINUS && !isDigit(first)) return false
  const dot = text.indexOf('.', start)
  return dot !== -1 && dot < end
}

/**
 * The keys of the Dictionary `text` whose value is a Decimal (RFC 8941
 * §3.3.2), as structured-headers returns them: a duplicate key counts with
 * its last value (§4.2.2). `text` is a value structured-headers parsed as a
 * Dictionary; parameters and Inner List members are not member values.
 */
export function decimalMembers (text: string): Set<string> {
  const decimals = new Set<string>()
  // Fast path: without a "." there is no Decimal.
  if (text.indexOf('.') === -1) return decimals
  let pos = 0
  for (;;) {
    pos = skipSpaces(text, pos)
    const keyStart = pos
    while (pos < text.length && isKeyChar(text.charCodeAt(pos))) pos++
    const key = text.slice(keyStart, pos)
    let decimal = false
    if (text.charCodeAt(pos) === EQUALS) {
      pos++
      if (text.charCodeAt(pos) === OPEN) {
        pos = skipInnerList(text, pos)
      } else {
        const end = skipBareItem(text, pos)
        decimal = isDecimal(text, pos, end)
        pos = end
      }
    }
    pos = skipParameters(text, pos)
    if (decimal) decimals.add(key)
    else decimals.delete(key)
    pos = skipSpaces(text, pos)
    if (text.charCodeAt(pos) !== COMMA) return decimals
    pos++
  }
}
