// The interceptor's options, validated once: the plugin's names and defaults where
// they mean the same; unknown keys refused with the nearest name (lib/plugin/plugin-options.ts).
import type { DigestAlgorithm, DigestInterceptorOptions } from '../../types/client'
import { FST_DIGEST_INVALID_OPTION } from '../core/errors'
import { serializeWantField } from '../core/fields'
import { checkAlgorithms, describe, nearestKey } from '../core/option-checks'

/** The readings a coded Repr-Digest may match: coded bytes (RFC 9530 §3), decoded ones, or either. */
export type ReprReading = 'either' | 'decoded' | 'coded'

/** The options, checked; want*: the Want-Content-Digest / -Repr- / -Unencoded- values to send, or null. */
export type ClientParams = ReturnType<typeof normalizeClientOptions>

export const defaultMaxDecodedSize = 64 * 1024 * 1024

const optionKeys: Readonly<Record<keyof DigestInterceptorOptions, true>> = {
  algorithms: true, verify: true, strict: true, reprDigest: true, want: true, maxDecodedSize: true
}
const keys = Object.keys(optionKeys)
const WANT_KEYS = ['content', 'repr', 'unencoded']

const fail = (name: string, reason: string): Error => new FST_DIGEST_INVALID_OPTION(name, reason)

/** An accepted algorithm or a list of 1 to 10 as a Want-* value: weights 10, 9, … (RFC 9530 §4). */
function wantValue (value: unknown, name: string, enabled: readonly DigestAlgorithm[]): string | null {
  if (value === undefined) return null
  const list: unknown[] = Array.isArray(value) ? value : [value]
  if (list.length === 0 || list.length > 10) throw fail(name, `expected 1 to 10 algorithms, got ${list.length}`)
  list.forEach((key, i) => {
    if (typeof key !== 'string' || !enabled.includes(key as DigestAlgorithm)) {
      throw fail(name, `expected algorithms among the accepted ones (${enabled.join(', ')}), got ${describe(key)}`)
    }
    if (list.indexOf(key) !== i) throw fail(name, `${describe(key)} is listed twice`)
  })
  return serializeWantField(list.map((key, i) => [key as string, 10 - i]))
}

// An algorithm or a list asks for Content-Digest and Repr-Digest, not Unencoded-Digest (without
// a coding, Repr-Digest's value; with one, a decoder even in strict mode); the object, per field.
function checkWant (value: unknown, enabled: readonly DigestAlgorithm[]): Array<string | null> {
  if (value === undefined) return [null, null, null]
  if (typeof value === 'string' || Array.isArray(value)) return [...Array(2).fill(wantValue(value, 'want', enabled)), null]
  if (value === null || typeof value !== 'object') {
    throw fail('want', `expected an algorithm, a list of them or { content, repr, unencoded }, got ${describe(value)}`)
  }
  const unknown = Object.keys(value).find((key) => !WANT_KEYS.includes(key))
  if (unknown !== undefined) throw fail(`want.${unknown}`, `unknown key (want keys: ${WANT_KEYS.join(', ')})`)
  return WANT_KEYS.map((key) => wantValue((value as Record<string, unknown>)[key], `want.${key}`, enabled))
}

/** Validate and freeze the options; throws FST_DIGEST_INVALID_OPTION naming the option. */
export function normalizeClientOptions (opts: DigestInterceptorOptions = {}) {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw fail('options', `expected an object, got ${describe(opts)}`)
  const unknown = Object.keys(opts).find((key) => !Object.hasOwn(optionKeys, key))
  if (unknown !== undefined) {
    const nearest = nearestKey(unknown, keys)
    throw fail(unknown, nearest === undefined ? `unknown option (options: ${keys.join(', ')})` : `unknown option; did you mean ${JSON.stringify(nearest)}?`)
  }
  const algorithms = checkAlgorithms(opts.algorithms, fail)
  const { verify = 'if-present', strict = false, maxDecodedSize = defaultMaxDecodedSize } = opts
  if (verify !== 'if-present' && verify !== 'required') throw fail('verify', `expected 'if-present' or 'required', got ${describe(verify)}`)
  if (typeof strict !== 'boolean') throw fail('strict', `expected a boolean, got ${describe(strict)}`)
  const reprDigest = opts.reprDigest ?? (strict ? 'coded' : 'either')
  if (!['either', 'decoded', 'coded'].includes(reprDigest)) {
    throw fail('reprDigest', `expected 'either', 'decoded' or 'coded', got ${describe(reprDigest)}`)
  }
  // Strict mode is RFC 9530 §3 to the letter: the content coding is part of the representation.
  if (strict && reprDigest !== 'coded') {
    throw fail('reprDigest', `strict: true reads a coded Repr-Digest over the coded bytes only, got ${describe(reprDigest)}`)
  }
  if (typeof maxDecodedSize !== 'number' || !Number.isSafeInteger(maxDecodedSize) || maxDecodedSize < 0) {
    throw fail('maxDecodedSize', `expected a non-negative integer number of bytes, got ${describe(maxDecodedSize)}`)
  }
  const [wantContent, wantRepr, wantUnencoded] = checkWant(opts.want, algorithms) as [string | null, string | null, string | null]
  return Object.freeze({ algorithms, verify, strict, reprDigest: reprDigest as ReprReading, wantContent, wantRepr, wantUnencoded, maxDecodedSize })
}
