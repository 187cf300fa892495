// Parsing and serialization of the four RFC 9530 fields (Content-Digest,
// Repr-Digest, Want-Content-Digest, Want-Repr-Digest), of Unencoded-Digest and
// Want-Unencoded-Digest (draft-ietf-httpbis-unencoded-digest, the same forms)
// and of the legacy RFC 3230 `Digest` header. With lib/core/integrity.ts
// (Accept-Signature), the only module that imports structured-headers.
//
// Decisions (RFC 9530 §2–§4, RFC 8941; docs/design.md):
// * Absent, empty and blank field values (and field lines) carry nothing to
//   check: the parsers return null. A digest field whose members are all
//   dropped (unknown keys that are not Byte Sequences) also returns null, so a
//   DigestMap is never empty.
// * Several field lines are combined with ", " (RFC 9110 §5.3; RFC 8941 §4.2),
//   so a duplicate key in a later line wins, as in one line (RFC 8941 §4.2.2).
// * Base64 in Byte Sequences follows structured-headers (WHATWG atob):
//   missing padding and non-zero pad bits are accepted (RFC 8941 §4.2.7
//   SHOULD NOT fail); excess padding such as the RFC's own
//   `:RK/0…FabDg==:` typo (B.5, B.6, B.11, C.1) is a syntax error, as strict
//   RFC 4648 decoding says. Content-Digest / Repr-Digest syntax errors throw
//   FST_DIGEST_INVALID_FIELD (an integrity check must not silently pass);
//   Want-* fields are hints and are ignored instead (RFC 8941 §4.2).
// * A Decimal is not an Integer (RFC 8941 §3.3.1, §3.3.2, §4.2.4), even with
//   an integral value: `sha-256=10.0` is a Decimal. structured-headers returns
//   a JS number for both, so where an Integer is required (Want-* weights,
//   unixsum/unixcksum values) the member's type is read back from the field
//   text (decimalMembers), and a Decimal is refused like any other wrong type.
import { parseDictionary } from 'structured-headers'
import type { DigestAlgorithm, DigestMap, SerializeOptions, WantMap } from '../../types/index'
import { base64Digester, computeDigest, isDigestAlgorithm } from './algorithms'
import { FST_DIGEST_INVALID_FIELD } from './errors'

// unixsum and unixcksum may travel as Integers (the default serialization):
// their fixed width in octets, big-endian (RFC 9530 §5, Appendix D).
const INTEGER_WIDTH: ReadonlyMap<string, number> = new Map([['unixsum', 2], ['unixcksum', 4]])

// An Integer that does not fit its checksum's width becomes an 8-octet value,
// a length no algorithm has, so verification reports it as 'invalid-length'.
const OUT_OF_RANGE_WIDTH = 8

const SF_KEY = /^[a-z*][a-z0-9_\-.*]*$/

function isOWS (code: number): boolean {
  return code === 0x20 || code === 0x09
}

// Strips leading and trailing SP / HTAB without a regular expression, so a
// long run of whitespace costs linear time.
function trimOWS (text: string): string {
  let start = 0
  let end = text.length
  while (start < end && isOWS(text.charCodeAt(start))) start++
  while (end > start && isOWS(text.charCodeAt(end - 1))) end--
  return text.slice(start, end)
}

// One field value out of the header's string or field lines; null when there
// is nothing in it. Anything but a string or an array of strings is absent.
function combineLines (value: unknown, separator: string): string | null {
  let lines: readonly unknown[]
  if (typeof value === 'string') {
    lines = [value]
  } else if (Array.isArray(value)) {
    lines = value
  } else {
    return null
  }
  let combined = ''
  for (const line of lines) {
    if (typeof line !== 'string') continue
    const trimmed = trimOWS(line)
    if (trimmed === '') continue
    combined = combined === '' ? trimmed : combined + separator + trimmed
  }
  return combined === '' ? null : combined
}

// Where a String, Display String or Byte Sequence starts, or a Token (which
// may hold ":" and "/", RFC 8941 §3.3.4), so that the "," "." and ":" inside
// them are skipped (RFC 8941 §4.2.5–§4.2.7, RFC 9651 §4.2.10).
const OPAQUE = /%"[^"]*"|"(?:[^"\\]|\\.)*"|[A-Za-z*][\w!#$%&'*+.^`|~:/-]*|:[^:]*:/g
// A member: its key and, after "=", its bare item up to parameters or the next member.
const MEMBER = /(?:^|,)[ \t]*([a-z*][a-z0-9_.*-]*)(?:=([^,;]*))?/g

/**
 * The keys of a Dictionary (one that structured-headers parsed) whose value
 * is a Decimal: any number with a "." (RFC 8941 §3.3.2, §4.2.4), which
 * structured-headers returns as a JS number just like an Integer. The last
 * member of a key counts, as in the parsed Dictionary (RFC 8941 §4.2.2).
 */
export function decimalMembers (input: string): Set<string> {
  const decimals = new Set<string>()
  if (!input.includes('.')) return decimals
  const plain = input.replace(OPAQUE, (item) => '"%:'.includes(item.charAt(0)) ? '""' : item)
  for (const [, key, value] of plain.matchAll(MEMBER)) {
    if (value !== undefined && /^-?\d+\./.test(value)) decimals.add(key as string)
    else decimals.delete(key as string)
  }
  return decimals
}

function integerOctets (value: number, width: number): Buffer {
  if (value >= 0 && value < 2 ** (8 * width)) {
    const octets = Buffer.alloc(width)
    octets.writeUIntBE(value, 0, width)
    return octets
  }
  const octets = Buffer.alloc(OUT_OF_RANGE_WIDTH)
  octets.writeBigInt64BE(BigInt(value))
  return octets
}

/**
 * Parse a Content-Digest, Repr-Digest (RFC 9530 §2, §3) or Unencoded-Digest
 * (draft-ietf-httpbis-unencoded-digest §3) field value; `field` names it.
 * Returns null when the field is absent or carries nothing we can use; throws
 * FST_DIGEST_INVALID_FIELD (400) when it is malformed. Byte Sequence members
 * are kept for every key (unknown ones too, so they can be reported); in
 * Content-Digest and Repr-Digest, unixsum/unixcksum also accept an Integer
 * (not a Decimal such as `6405.0`, RFC 8941 §3.3.1); parameters are ignored.
 */
export function parseDigestField (
  value: string | readonly string[] | null | undefined,
  field: string = 'Content-Digest'
): DigestMap | null {
  const input = combineLines(value, ', ')
  if (input === null) return null
  let dictionary: ReturnType<typeof parseDictionary>
  try {
    dictionary = parseDictionary(input)
  } catch (err) {
    throw new FST_DIGEST_INVALID_FIELD(field, (err as Error).message)
  }
  const digests: DigestMap = new Map()
  let decimals: Set<string> | undefined
  for (const [key, [item]] of dictionary) {
    if (item instanceof ArrayBuffer) {
      digests.set(key, Buffer.from(item))
      continue
    }
    // Unencoded-Digest values are Byte Sequences for every algorithm
    // (draft-ietf-httpbis-unencoded-digest §3).
    const width = field === 'Unencoded-Digest' ? undefined : INTEGER_WIDTH.get(key)
    // An Integer, not a Decimal with an integral value (the type is read
    // from the text only for these keys, and once per field).
    if (width !== undefined && Number.isInteger(item) && !(decimals ??= decimalMembers(input)).has(key)) {
      digests.set(key, integerOctets(item as number, width))
      continue
    }
    if (isDigestAlgorithm(key)) {
      const expected = width === undefined ? 'a Byte Sequence' : 'a Byte Sequence or an Integer'
      throw new FST_DIGEST_INVALID_FIELD(field, `${key} must be ${expected}`)
    }
    // An unknown key with a value that is not a Byte Sequence: we do not know
    // its definition, so it is dropped rather than treated as an error.
  }
  return digests.size === 0 ? null : digests
}

/**
 * Whether the digests of `algorithms` are written alike in both modes: none
 * is unixsum or unixcksum, which the default mode writes as Integers (and
 * Unencoded-Digest always as Byte Sequences).
 */
export function writtenAlike (algorithms: readonly DigestAlgorithm[]): boolean {
  for (let i = 0; i < algorithms.length; i++) if (INTEGER_WIDTH.has(algorithms[i] as DigestAlgorithm)) return false
  return true
}

/** One member of a digest field: `sha-256=:…:`, or `unixsum=6405` outside strict mode. */
function digestMember (algorithm: DigestAlgorithm, octets: Buffer, strict: boolean): string {
  const width = strict ? undefined : INTEGER_WIDTH.get(algorithm)
  return width === octets.length
    ? `${algorithm}=${octets.readUIntBE(0, width)}`
    : `${algorithm}=:${octets.toString('base64')}:`
}

/**
 * Serialize digests as a Content-Digest / Repr-Digest value:
 * `sha-256=:…:, sha-512=:…:`. unixsum and unixcksum are bare Integers by
 * default (`unixsum=6405`) and Byte Sequences in strict mode (`unixsum=:GQU=:`).
 * Built by hand: this runs for every response.
 */
export function serializeDigestField (
  digests: Iterable<readonly [DigestAlgorithm, Buffer]>,
  options?: SerializeOptions
): string {
  const strict = options?.strict === true
  let out = ''
  for (const [algorithm, octets] of digests) {
    if (out !== '') out += ', '
    out += digestMember(algorithm, octets, strict)
  }
  return out
}

/**
 * serializeDigestField() of the members of `digests` named in `algorithms`,
 * in that order, or null when none is there. The plugin's own path: no
 * intermediate list.
 */
export function serializeSelected (
  digests: ReadonlyMap<DigestAlgorithm, Buffer> | null,
  algorithms: readonly DigestAlgorithm[],
  strict: boolean
): string | null {
  if (digests === null) return null
  let out: string | null = null
  for (let i = 0; i < algorithms.length; i++) {
    const algorithm = algorithms[i] as DigestAlgorithm
    const octets = digests.get(algorithm)
    if (octets === undefined) continue
    const member = digestMember(algorithm, octets, strict)
    out = out === null ? member : `${out}, ${member}`
  }
  return out
}

/** The field value of the digests of some data, hashed and serialized in one step (digests only sent). */
export type FieldWriter = (data: Buffer | Uint8Array | string) => string

/**
 * The writer of the field value of `algorithms`, in that order (the same
 * value as serializeSelected() over digestAll()), built once for a list known
 * in advance: each algorithm is looked up here, not per response. Null for none.
 */
export function fieldWriter (algorithms: readonly DigestAlgorithm[], strict: boolean): FieldWriter | null {
  const members = algorithms.map((algorithm): FieldWriter => {
    if (!strict && INTEGER_WIDTH.has(algorithm)) return (data) => digestMember(algorithm, computeDigest(algorithm, data), false)
    const prefix = `${algorithm}=:`
    const digest = base64Digester(algorithm)
    return (data) => prefix + digest(data) + ':'
  })
  if (members.length < 2) return members[0] ?? null
  return (data) => members.map((member) => member(data)).join(', ')
}

/** fieldWriter()'s value for `data`, for a list used once; null for no algorithm. */
export function digestFieldOf (algorithms: readonly DigestAlgorithm[], data: Buffer | Uint8Array | string, strict: boolean): string | null {
  return fieldWriter(algorithms, strict)?.(data) ?? null
}

/**
 * Parse a Want-Content-Digest / Want-Repr-Digest value (RFC 9530 §4): a
 * Dictionary of Integers 0..10. Returns null when the field is absent, empty,
 * not a valid Dictionary, or has any member that is not an Integer in 0..10
 * (a Decimal such as `10.0` is not an Integer, RFC 8941 §3.3.1, §4.2.4): the
 * whole field is then ignored (RFC 8941 §4.2, RFC 9651 §2.2). Unknown keys are
 * kept; the caller decides. Never throws.
 */
export function parseWantField (value: string | readonly string[] | null | undefined): WantMap | null {
  const input = combineLines(value, ', ')
  if (input === null) return null
  let dictionary: ReturnType<typeof parseDictionary>
  try {
    dictionary = parseDictionary(input)
  } catch {
    return null
  }
  const want: WantMap = new Map()
  const decimals = decimalMembers(input)
  for (const [key, [weight]] of dictionary) {
    if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0 || weight > 10 || decimals.has(key)) return null
    want.set(key, weight + 0) // `+ 0` turns the Integer -0 into 0
  }
  return want
}

/**
 * Serialize preferences as a Want-* value: `sha-256=10, sha-512=3`. Throws a
 * TypeError for a key that is not a Structured Field key or a weight that is
 * not an Integer 0..10 (a programming error; it would produce a bad field).
 */
export function serializeWantField (preferences: Iterable<readonly [string, number]>): string {
  let out = ''
  for (const [key, weight] of preferences) {
    if (!SF_KEY.test(key)) throw new TypeError(`Invalid Want-Digest key: ${JSON.stringify(key)}`)
    if (!Number.isInteger(weight) || weight < 0 || weight > 10) {
      throw new TypeError(`Invalid Want-Digest weight for ${key}: ${weight}`)
    }
    if (out !== '') out += ', '
    out += `${key}=${weight}`
  }
  return out
}

// ---------------------------------------------------------------------------
// RFC 3230 `Digest` (legacy, obsoleted by RFC 9530 §1.3; RFC 3230 §4.3.2): a plain comma-separated list
// of `algorithm=encoded-output`, algorithm names case-insensitive. It is not a
// Structured Field and is never given to the SF parser.

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/
// unixsum/unixcksum: decimal digits only, so `UNIXsum=63350.0` does not
// decode and the member is ignored, like any other malformed member.
const DECIMAL = /^[0-9]{1,15}$/
const HEX = /^[0-9A-Fa-f]{1,8}$/

function decodeBase64 (encoded: string): Buffer | null {
  if (!BASE64.test(encoded)) return null
  // Padding optional, but when present the length is a multiple of 4; a
  // length of 4n + 1 can never be base64.
  const padded = encoded.endsWith('=')
  if (padded ? encoded.length % 4 !== 0 : encoded.length % 4 === 1) return null
  return Buffer.from(encoded, 'base64')
}

function decodeDecimal (width: number): (encoded: string) => Buffer | null {
  return (encoded) => DECIMAL.test(encoded) ? integerOctets(Number(encoded), width) : null
}

function decodeHex (encoded: string): Buffer | null {
  return HEX.test(encoded) ? integerOctets(Number.parseInt(encoded, 16), 4) : null
}

// Lowercased RFC 3230 registry name → [RFC 9530 key, decoder].
const LEGACY: ReadonlyMap<string, readonly [DigestAlgorithm, (encoded: string) => Buffer | null]> = new Map([
  ['sha-256', ['sha-256', decodeBase64]],
  ['sha-512', ['sha-512', decodeBase64]],
  ['md5', ['md5', decodeBase64]],
  ['sha', ['sha', decodeBase64]],
  ['unixsum', ['unixsum', decodeDecimal(2)]],
  ['unixcksum', ['unixcksum', decodeDecimal(4)]],
  ['adler32', ['adler', decodeHex]],
  ['crc32c', ['crc32c', decodeHex]]
])

/**
 * Parse an RFC 3230 `Digest` header into RFC 9530 keys and raw octets
 * (`SHA-256=…` → 'sha-256', `ADLER32=03da0195` → 'adler' 03 da 01 95).
 * Unknown algorithms and members that do not decode are ignored; returns null
 * when no usable member is left. Never throws.
 */
export function parseLegacyDigest (value: string | readonly string[] | null | undefined): DigestMap | null {
  const input = combineLines(value, ',')
  if (input === null) return null
  const digests: DigestMap = new Map()
  for (const element of input.split(',')) {
    const eq = element.indexOf('=')
    if (eq === -1) continue
    const entry = LEGACY.get(trimOWS(element.slice(0, eq)).toLowerCase())
    if (entry === undefined) continue
    const octets = entry[1](trimOWS(element.slice(eq + 1)))
    if (octets !== null) digests.set(entry[0], octets)
  }
  return digests.size === 0 ? null : digests
}
