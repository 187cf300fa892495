// Content-Digest, Repr-Digest, Want-* (RFC 9530 §2-§4), Unencoded-Digest and Want-Unencoded-Digest
// (draft-ietf-httpbis-unencoded-digest, the same forms), and the legacy RFC 3230 `Digest`; the decisions (field lines,
// base64, Decimals, throws): docs/design.md, "Parsing fields".
import { parseDictionary } from 'structured-headers'
import type { DigestAlgorithm, DigestMap, SerializeOptions, WantMap } from '../../types/index'
import { base64Digester, computeDigest, isDigestAlgorithm } from './algorithms'
import { FST_DIGEST_INVALID_FIELD } from './errors'

// unixsum and unixcksum may be Integers: their width in octets, big-endian (RFC 9530 §5, Appendix D).
const INTEGER_WIDTH: ReadonlyMap<string, number> = new Map([['unixsum', 2], ['unixcksum', 4]])

// An RFC 8941 Dictionary key (§3.2), the pattern shared by the expressions below.
const KEY = '[a-z*][a-z0-9_.*-]*'

/** An RFC 8941 Dictionary key (§3.2). */
export const SF_KEY = new RegExp(`^${KEY}$`)

// Strips SP / HTAB without a regular expression: linear time on long runs.
function trimOWS (text: string): string {
  let start = 0
  let end = text.length
  while (start < end && (text.charCodeAt(start) === 0x20 || text.charCodeAt(start) === 0x09)) start++
  while (end > start && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--
  return text.slice(start, end)
}

// One field value out of a header's string or field lines (RFC 9110 §5.3); null when nothing is in it.
function combineLines (value: unknown): string | null {
  if (typeof value === 'string') return trimOWS(value) || null
  const lines: readonly unknown[] = Array.isArray(value) ? value : []
  let combined = ''
  for (const line of lines) {
    const trimmed = typeof line === 'string' ? trimOWS(line) : ''
    if (trimmed !== '') combined = combined === '' ? trimmed : `${combined}, ${trimmed}`
  }
  return combined === '' ? null : combined
}

// Strings, Display Strings, Byte Sequences and Tokens, whose "," "." ":" are skipped (RFC 8941
// §4.2.5–§4.2.7, RFC 9651 §4.2.10); and a member: its key and its bare item, if any.
const OPAQUE = /%"[^"]*"|"(?:[^"\\]|\\.)*"|[A-Za-z*][\w!#$%&'*+.^`|~:/-]*|:[^:]*:/g
const MEMBER = new RegExp(`(?:^|,)[ \\t]*(${KEY})(?:=([^,;]*))?`, 'g')

/** The keys of a parsed Dictionary whose value is a Decimal (RFC 8941 §4.2.4); a key's last member counts (§4.2.2). */
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

// Out of its checksum's range, 8 octets: a length no algorithm has ('invalid-length').
function integerOctets (value: number, width: number): Buffer {
  const inRange = value >= 0 && value < 2 ** (8 * width)
  const octets = Buffer.alloc(inRange ? width : 8)
  if (inRange) octets.writeUIntBE(value, 0, width)
  else octets.writeBigInt64BE(BigInt(value))
  return octets
}

// A member `key=:base64:` without parameters, then a comma and the next key (OWS around it, RFC 8941 §4.2.2) or the
// end; base64 padded to a multiple of 4 (§4.2.7).
const PLAIN_MEMBER = new RegExp(`(${KEY})=:([A-Za-z0-9+/]*={0,2}):(?:[ \\t]*,[ \\t]*(?=[a-z*])|$)`, 'y')

/**
 * A Dictionary of plain Byte Sequences, as clients write digest fields, read without the general parser: each key's
 * base64 text as sent, a duplicate key overwriting but keeping its place (§4.2.2, as Map.set does). Null for any other
 * form, which the general parser reads.
 */
function plainDigestTexts (input: string): Map<string, string> | null {
  const texts = new Map<string, string>()
  PLAIN_MEMBER.lastIndex = 0
  while (PLAIN_MEMBER.lastIndex < input.length) {
    const member = PLAIN_MEMBER.exec(input)
    if (member === null || (member[2] as string).length % 4 !== 0) return null
    texts.set(member[1] as string, member[2] as string)
  }
  return texts
}

// The members of a Dictionary that is not plain, as base64 text: Byte Sequences kept for every key, unixsum/unixcksum
// Integers too but in Unencoded-Digest (its §3); no parameters; null for none. FST_DIGEST_INVALID_FIELD when
// malformed.
function dictionaryTexts (input: string, field: string): Map<string, string> | null {
  let dictionary: ReturnType<typeof parseDictionary>
  try {
    dictionary = parseDictionary(input)
  } catch (err) {
    throw new FST_DIGEST_INVALID_FIELD(field, (err as Error).message)
  }
  const texts = new Map<string, string>()
  let decimals: Set<string> | undefined
  for (const [key, [item]] of dictionary) {
    const width = field === 'Unencoded-Digest' ? undefined : INTEGER_WIDTH.get(key)
    if (item instanceof ArrayBuffer) {
      texts.set(key, Buffer.from(item).toString('base64'))
    } else if (width !== undefined && Number.isInteger(item) && !(decimals ??= decimalMembers(input)).has(key)) {
      texts.set(key, integerOctets(item as number, width).toString('base64'))
    } else if (isDigestAlgorithm(key)) {
      const kind = width === undefined ? 'a Byte Sequence' : 'a Byte Sequence or an Integer'
      throw new FST_DIGEST_INVALID_FIELD(field, `${key} must be ${kind}`)
    } // else an unknown key whose value is not a Byte Sequence: dropped.
  }
  return texts.size === 0 ? null : texts
}

/**
 * A Content-Digest, Repr-Digest or Unencoded-Digest value (`field`) with each value as base64 text: as sent for plain
 * members, else of the octets. Null when nothing usable, FST_DIGEST_INVALID_FIELD when malformed (docs/design.md,
 * "Parsing fields").
 */
export function parseDigestTexts (
  value: string | readonly string[] | null | undefined, field: string
): Map<string, string> | null {
  const input = combineLines(value)
  if (input === null) return null
  return plainDigestTexts(input) ?? dictionaryTexts(input, field)
}

/** parseDigestTexts() as octets (Buffer decodes base64 as atob does, pad bits dropped by both). */
export function parseDigestField (
  value: string | readonly string[] | null | undefined, field: string = 'Content-Digest'
): DigestMap | null {
  const texts = parseDigestTexts(value, field)
  return texts === null ? null : new Map([...texts].map(([key, text]) => [key, Buffer.from(text, 'base64')]))
}

/** Whether no algorithm of the list is written as an Integer in the default mode (unixsum, unixcksum). */
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
 * Serialize digests as a Content-Digest / Repr-Digest value: `sha-256=:…:, unixsum=6405` (strict: `unixsum=:GQU=:`).
 */
export function serializeDigestField (
  digests: Iterable<readonly [DigestAlgorithm, Buffer]>, options?: SerializeOptions
): string {
  const strict = options?.strict === true
  let out = ''
  for (const [algorithm, octets] of digests) out += (out === '' ? '' : ', ') + digestMember(algorithm, octets, strict)
  return out
}

/** serializeDigestField() of the members of `digests` named in `algorithms`, in that order; null for none. */
export function serializeSelected (
  digests: ReadonlyMap<DigestAlgorithm, Buffer> | null, algorithms: readonly DigestAlgorithm[], strict: boolean
): string | null {
  let out = ''
  for (const algorithm of algorithms) {
    const octets = digests?.get(algorithm)
    if (octets !== undefined) out += (out === '' ? '' : ', ') + digestMember(algorithm, octets, strict)
  }
  return out === '' ? null : out
}

type FieldWriter = (data: Buffer | Uint8Array | string) => string

/**
 * The writer of serializeSelected(digestAll(algorithms, data), algorithms), algorithms looked up once; null for none.
 */
export function fieldWriter (algorithms: readonly DigestAlgorithm[], strict: boolean): FieldWriter | null {
  const members = algorithms.map((algorithm): FieldWriter => {
    if (!strict && INTEGER_WIDTH.has(algorithm)) {
      return (data) => digestMember(algorithm, computeDigest(algorithm, data), false)
    }
    const prefix = `${algorithm}=:`
    const digest = base64Digester(algorithm)
    return (data) => prefix + digest(data) + ':'
  })
  if (members.length < 2) return members[0] ?? null
  return (data) => members.map((member) => member(data)).join(', ')
}

/** fieldWriter()'s value for `data`, for a list used once; null for no algorithm. */
export function digestFieldOf (
  algorithms: readonly DigestAlgorithm[], data: Buffer | Uint8Array | string, strict: boolean
): string | null {
  return fieldWriter(algorithms, strict)?.(data) ?? null
}

/** A Want-* preference: an Integer from 0 to 10 (RFC 9530 §4). */
const isWeight = (weight: unknown): weight is number =>
  typeof weight === 'number' && Number.isInteger(weight) && weight >= 0 && weight <= 10

/**
 * Parse a Want-* value (RFC 9530 §4): Integers 0..10, unknown keys kept; null when absent or invalid (RFC 8941 §4.2).
 */
export function parseWantField (value: string | readonly string[] | null | undefined): WantMap | null {
  const input = combineLines(value)
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
    if (!isWeight(weight) || decimals.has(key)) return null
    want.set(key, weight + 0) // `+ 0` turns the Integer -0 into 0
  }
  return want
}

/** Serialize preferences as a Want-* value: `sha-256=10, sha-512=3`; a TypeError for a bad key or weight. */
export function serializeWantField (preferences: Iterable<readonly [string, number]>): string {
  let out = ''
  for (const [key, weight] of preferences) {
    if (!SF_KEY.test(key)) throw new TypeError(`Invalid Want-Digest key: ${JSON.stringify(key)}`)
    if (!isWeight(weight)) throw new TypeError(`Invalid Want-Digest weight for ${key}: ${weight}`)
    out += `${out === '' ? '' : ', '}${key}=${weight}`
  }
  return out
}

// RFC 3230 `Digest` (obsoleted by RFC 9530 §1.3): a comma-separated list of `algorithm=encoded-output`, names
// case-insensitive (§4.3.2), `adler32` for RFC 9530's `adler`; no Structured Field. Base64 with optional padding, but
// never a length of 4n + 1 or a padded length that is not 4n; unixsum/unixcksum in decimal digits (`63350.0` is
// ignored), adler32/crc32c in hexadecimal.
const BASE64 = /^(?=.)(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/

function legacyOctets (algorithm: DigestAlgorithm, encoded: string): Buffer | null {
  const width = INTEGER_WIDTH.get(algorithm)
  if (width !== undefined) return /^[0-9]{1,15}$/.test(encoded) ? integerOctets(Number(encoded), width) : null
  if (algorithm === 'adler' || algorithm === 'crc32c') {
    return /^[0-9A-Fa-f]{1,8}$/.test(encoded) ? integerOctets(Number.parseInt(encoded, 16), 4) : null
  }
  return BASE64.test(encoded) ? Buffer.from(encoded, 'base64') : null
}

/** Parse an RFC 3230 `Digest` into RFC 9530 keys and octets, members that do not decode ignored; null for none. */
export function parseLegacyDigest (value: string | readonly string[] | null | undefined): DigestMap | null {
  const input = combineLines(value)
  if (input === null) return null
  const digests: DigestMap = new Map()
  for (const element of input.split(',')) {
    const eq = element.indexOf('=')
    const name = trimOWS(element.slice(0, eq)).toLowerCase()
    const key = name === 'adler32' ? 'adler' : name
    if (eq === -1 || name === 'adler' || !isDigestAlgorithm(key)) continue
    const octets = legacyOctets(key, trimOWS(element.slice(eq + 1)))
    if (octets !== null) digests.set(key, octets)
  }
  return digests.size === 0 ? null : digests
}
