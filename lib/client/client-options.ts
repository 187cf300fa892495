// The client's options (docs/client.md), checked once by digestInterceptor(): the plugin's names and defaults where
// they mean the same; `want`: the Want-* fields to send.
import type { DigestAlgorithm, DigestInterceptorOptions } from '../../types/client'
import { FST_DIGEST_INVALID_OPTION } from '../core/errors'
import { serializeWantField } from '../core/fields'
import {
  checkAlgorithms, checkBoolean, checkCount, checkOptions, defaultAlgorithms, describe, oneOf, type Check, type Table
} from '../core/option-checks'

/**
 * The options, checked once (the plugin's names and defaults where they mean the same); want: the Want-* fields to
 * send.
 */
export type ClientParams = Readonly<
  Required<Omit<DigestInterceptorOptions, 'want'>> & { want: ReadonlyArray<[string, string]> }
>

const WANT_KEYS = ['content', 'repr', 'unencoded']

const fail = (name: string, reason: string): Error => new FST_DIGEST_INVALID_OPTION(name, reason)
const checkReading = oneOf<ClientParams['reprDigest']>('either', 'decoded', 'coded')

/** An accepted algorithm or a list of 1 to 10 as a Want-* value: weights 10, 9, … (RFC 9530 §4). */
function wantValue (value: unknown, name: string, enabled: readonly DigestAlgorithm[]): string {
  const list: unknown[] = Array.isArray(value) ? value : [value]
  if (list.length === 0 || list.length > 10) throw fail(name, `expected 1 to 10 algorithms, got ${list.length}`)
  for (const [i, key] of list.entries()) {
    if (!enabled.includes(key as DigestAlgorithm)) {
      throw fail(name, `expected algorithms among the accepted ones (${enabled.join(', ')}), got ${describe(key)}`)
    }
    if (list.indexOf(key) !== i) throw fail(name, `${describe(key)} is listed twice`)
  }
  return serializeWantField(list.map((key, i) => [key as string, 10 - i]))
}

// An algorithm or a list asks for Content-Digest and Repr-Digest (docs/design.md, "The client"); the object, per field.
const checkWant: Check<ClientParams['want'], ClientParams> = (value, name, fail, { algorithms }) => {
  const both = typeof value === 'string' || Array.isArray(value)
  const byKey = (both ? { content: value, repr: value } : value) as Record<string, unknown> | null
  if (byKey === null || typeof byKey !== 'object') {
    throw fail(name, `expected an algorithm, a list of them or { content, repr, unencoded }, got ${describe(value)}`)
  }
  const unknown = Object.keys(byKey).find((key) => !WANT_KEYS.includes(key))
  if (unknown !== undefined) throw fail(`want.${unknown}`, `unknown key (want keys: ${WANT_KEYS.join(', ')})`)
  return WANT_KEYS.filter((key) => byKey[key] !== undefined)
    .map((key) => [`want-${key}-digest`, wantValue(byKey[key], both ? name : `want.${key}`, algorithms)])
}

const clientOptions: Table<DigestInterceptorOptions, ClientParams> = {
  algorithms: [checkAlgorithms, defaultAlgorithms],
  verify: [oneOf<ClientParams['verify']>('if-present', 'required'), 'if-present'],
  strict: [checkBoolean, false],
  // Strict mode is RFC 9530 §3 to the letter: the content coding is part of the representation.
  reprDigest: [(value, name, fail, { strict }) => {
    const reading = checkReading(value, name, fail, null)
    if (strict && reading !== 'coded') {
      throw fail(name, `strict: true reads a coded Repr-Digest over the coded bytes only, got ${describe(reading)}`)
    }
    return reading
  }, 'either'],
  want: [checkWant, []],
  maxDecodedSize: [checkCount('bytes'), 64 * 1024 * 1024],
  acceptReencoded: [(value, name, fail) => {
    if (typeof value === 'boolean' || typeof value === 'function') return value as ClientParams['acceptReencoded']
    throw fail(name, `expected a boolean or a function, got ${describe(value)}`)
  }, false]
}

/**
 * Validate and freeze the options (reprDigest defaults to 'coded' under strict); throws FST_DIGEST_INVALID_OPTION
 * naming the option.
 */
export function normalizeClientOptions (opts: DigestInterceptorOptions = {}): ClientParams {
  return checkOptions(opts, clientOptions, fail, { reprDigest: opts?.strict === true ? 'coded' : 'either' })
}
