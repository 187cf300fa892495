// The interceptor's options, validated once when digestInterceptor() is
// called: the plugin's names and defaults where they mean the same
// (algorithms, verify, strict), plus `want`, `reprDigest` and `maxDecodedSize`. Unknown
// keys are refused with the nearest option named, as lib/plugin/options.ts does for
// the plugin. Pure: no fastify, no undici.
import type { DigestAlgorithm, DigestInterceptorOptions, WantOption } from '../../types/client'
import { FST_DIGEST_INVALID_OPTION } from '../core/errors'
import { serializeWantField } from '../core/fields'
import { nearestKey } from '../core/nearest-key'
import { checkAlgorithms, describe } from '../core/option-checks'

export interface ClientParams {
  readonly algorithms: readonly DigestAlgorithm[]
  readonly verify: 'if-present' | 'required'
  readonly strict: boolean
  /**
   * The readings a coded Repr-Digest may match: the coded bytes (RFC 9530 §3,
   * a strict server), the decoded ones (the plugin's default mode), or either.
   */
  readonly reprDigest: ReprReading
  /** Want-Content-Digest / Want-Repr-Digest / Want-Unencoded-Digest values to send, or null. */
  readonly wantContent: string | null
  readonly wantRepr: string | null
  readonly wantUnencoded: string | null
  readonly maxDecodedSize: number
}

export type ReprReading = 'either' | 'decoded' | 'coded'
const readings: readonly ReprReading[] = ['either', 'decoded', 'coded']

export const defaultMaxDecodedSize = 64 * 1024 * 1024

const optionKeys: Readonly<Record<keyof DigestInterceptorOptions, true>> = {
  algorithms: true,
  verify: true,
  strict: true,
  reprDigest: true,
  want: true,
  maxDecodedSize: true
}
const keys = Object.keys(optionKeys)

function fail (name: string, reason: string): Error {
  return new FST_DIGEST_INVALID_OPTION(name, reason)
}

/** An algorithm or a list of them, among the accepted ones, as a Want-* value (weights 10, 9, …). */
function wantValue (value: unknown, name: string, enabled: readonly DigestAlgorithm[]): string | null {
  if (value === undefined) return null
  const list: unknown[] = Array.isArray(value) ? value : [value]
  if (list.length === 0 || list.length > 10) throw fail(name, `expected 1 to 10 algorithms, got ${list.length}`)
  const weights: Array<[string, number]> = []
  for (const key of list) {
    if (typeof key !== 'string' || !enabled.includes(key as DigestAlgorithm)) {
      throw fail(name, `expected algorithms among the accepted ones (${enabled.join(', ')}), got ${describe(key)}`)
    }
    if (weights.some(([k]) => k === key)) throw fail(name, `${describe(key)} is listed twice`)
    // RFC 9530 §4: weights 1..10 say preference, 0 "not acceptable".
    weights.push([key, 10 - weights.length])
  }
  return serializeWantField(weights)
}

const WANT_KEYS = ['content', 'repr', 'unencoded']

/**
 * The Want-* values: an algorithm or a list asks for Content-Digest and
 * Repr-Digest (not Unencoded-Digest: for a response without a coding it is
 * Repr-Digest's value, and with one it costs a decoder even in strict mode);
 * the object form asks per field.
 */
function checkWant (value: WantOption | undefined, enabled: readonly DigestAlgorithm[]): [string | null, string | null, string | null] {
  if (value === undefined) return [null, null, null]
  if (typeof value === 'string' || Array.isArray(value)) {
    const field = wantValue(value, 'want', enabled)
    return [field, field, null]
  }
  if (value === null || typeof value !== 'object') {
    throw fail('want', `expected an algorithm, a list of them or { content, repr, unencoded }, got ${describe(value)}`)
  }
  for (const key of Object.keys(value)) {
    if (!WANT_KEYS.includes(key)) throw fail(`want.${key}`, `unknown key (want keys: ${WANT_KEYS.join(', ')})`)
  }
  const { content, repr, unencoded } = value as { content?: unknown, repr?: unknown, unencoded?: unknown }
  return [wantValue(content, 'want.content', enabled), wantValue(repr, 'want.repr', enabled), wantValue(unencoded, 'want.unencoded', enabled)]
}

/** Validate and freeze the options; throws FST_DIGEST_INVALID_OPTION naming the option. */
export function normalizeClientOptions (opts: DigestInterceptorOptions = {}): ClientParams {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) {
    throw fail('options', `expected an object, got ${describe(opts)}`)
  }
  for (const key of Object.keys(opts)) {
    if (!Object.hasOwn(optionKeys, key)) {
      const nearest = nearestKey(key, keys)
      throw fail(key, nearest === undefined
        ? `unknown option (options: ${keys.join(', ')})`
        : `unknown option; did you mean ${JSON.stringify(nearest)}?`)
    }
  }
  const algorithms = checkAlgorithms(opts.algorithms, fail)
  const verify = opts.verify ?? 'if-present'
  if (verify !== 'if-present' && verify !== 'required') {
    throw fail('verify', `expected 'if-present' or 'required', got ${describe(verify)}`)
  }
  const strict = opts.strict ?? false
  if (typeof strict !== 'boolean') throw fail('strict', `expected a boolean, got ${describe(strict)}`)
  const reprDigest = opts.reprDigest ?? (strict ? 'coded' : 'either')
  if (!readings.includes(reprDigest)) {
    throw fail('reprDigest', `expected 'either', 'decoded' or 'coded', got ${describe(reprDigest)}`)
  }
  // Strict mode is RFC 9530 §3 to the letter: the coding is part of the representation.
  if (strict && reprDigest !== 'coded') {
    throw fail('reprDigest', `strict: true reads a coded Repr-Digest over the coded bytes only, got ${describe(reprDigest)}`)
  }
  const maxDecodedSize = opts.maxDecodedSize ?? defaultMaxDecodedSize
  if (typeof maxDecodedSize !== 'number' || !Number.isSafeInteger(maxDecodedSize) || maxDecodedSize < 0) {
    throw fail('maxDecodedSize', `expected a non-negative integer number of bytes, got ${describe(maxDecodedSize)}`)
  }
  const [wantContent, wantRepr, wantUnencoded] = checkWant(opts.want, algorithms)
  return Object.freeze({ algorithms, verify, strict, reprDigest, wantContent, wantRepr, wantUnencoded, maxDecodedSize })
}
