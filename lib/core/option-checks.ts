// Option checks the plugin and the client share, "did you mean" for a key that is no option, and the
// normalized options one route's hooks read, frozen (built by lib/plugin/plugin-options.ts).
import type { DigestAlgorithm, DigestFieldsHook, VerifyPolicy } from '../../types/index'
import { ALGORITHMS } from './algorithms'
import type { IntegrityKeys, IntegritySignature } from './integrity'

export interface DigestParams {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
  /** contentDigest, reprDigest, unencodedDigest: the algorithms sent unsolicited (empty: only when wanted). */
  readonly contentDigest: readonly DigestAlgorithm[]
  readonly reprDigest: readonly DigestAlgorithm[]
  readonly unencodedDigest: readonly DigestAlgorithm[]
  readonly verify: VerifyPolicy
  readonly strict: boolean
  readonly trailers: boolean
  readonly maxBufferSize: number
  /** Media types or ranges (lowercase, no parameters) of live streams. */
  readonly liveTypes: ReadonlySet<string>
  /** The route's `live` option, or null to go by `liveTypes`. */
  readonly live: boolean | null
  readonly conditional: boolean
  readonly noTransform: boolean
  readonly legacyDigest: boolean
  /** fileCacheSize, fileHashing, fileSidecars, integrityKeys: plugin-level only. */
  readonly fileCacheSize: number
  readonly fileHashing: 'wait' | 'background'
  readonly fileSidecars: boolean | 'verified'
  /** Ed25519 keys for signature-based SRI, by keyid. */
  readonly integrityKeys: IntegrityKeys
  readonly integritySignature: IntegritySignature | null
  readonly onDigestFields: DigestFieldsHook | null
}

export type Fail = (name: string, reason: string) => Error

/** A check of one option's value (never undefined); `context` is what the option may depend on. */
export type Check<T, C = unknown> = (value: unknown, name: string, fail: Fail, context: C) => T

/** sha-256 and sha-512: the algorithms enabled when none are listed. */
export const defaultAlgorithms: readonly DigestAlgorithm[] = Object.freeze(['sha-256', 'sha-512'])

/** A value as an error message shows it. */
export function describe (value: unknown): string {
  switch (typeof value) {
    case 'string': return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value)
    case 'number': case 'boolean': case 'bigint': return `${typeof value} ${String(value)}`
    case 'object': return value === null ? 'null' : Array.isArray(value) ? 'an array' : 'object'
    default: return typeof value
  }
}

/** The enabled algorithms: a non-empty list of registry keys without repeats. */
export const checkAlgorithms: Check<readonly DigestAlgorithm[]> = (value, name, fail) => {
  if (!Array.isArray(value) || value.length === 0) {
    throw fail(name, `expected a non-empty array of algorithm keys, got ${describe(value)}`)
  }
  for (const [i, key] of value.entries()) {
    if (!ALGORITHMS.has(key)) {
      throw fail(name, `unknown algorithm ${describe(key)}; known: ${[...ALGORITHMS.keys()].join(', ')}`)
    }
    if (value.indexOf(key) !== i) throw fail(name, `${describe(key)} is listed twice`)
  }
  return Object.freeze([...value])
}

export const checkBoolean: Check<boolean> = (value, name, fail) => {
  if (typeof value !== 'boolean') throw fail(name, `expected a boolean, got ${describe(value)}`)
  return value
}

/** A non-negative integer number of `unit`. */
export function checkCount (unit: string): Check<number> {
  return (value, name, fail) => {
    if (!Number.isSafeInteger(value) || (value as number) < 0) {
      throw fail(name, `expected a non-negative integer number of ${unit}, got ${describe(value)}`)
    }
    return value as number
  }
}

/** One of `values`: `expected 'a', 'b' or false`. */
export function oneOf<T> (...values: T[]): Check<T> {
  const shown = values.map((v) => typeof v === 'string' ? `'${v}'` : String(v))
  const expected = `${shown.slice(0, -1).join(', ')} or ${shown.at(-1) as string}`
  return (value, name, fail) => {
    if (!values.includes(value as T)) throw fail(name, `expected ${expected}, got ${describe(value)}`)
    return value as T
  }
}

/**
 * Each option's check and default, every option of O and no other (compiled); checks run in this order, each given the
 * values before it.
 */
export type Table<O, P> = { readonly [K in keyof O & keyof P]-?: readonly [Check<P[K], P>, P[K]] }

/** `base` with the defined values of `opts` checked by the checks of `table`, frozen. */
export function apply<P extends object> (base: P, opts: object, table: object, fail: Fail): P {
  const params = { ...base } as Record<string, unknown>
  for (const [key, [check]] of Object.entries(table) as Array<[string, [Check<unknown, P>]]>) {
    const value: unknown = (opts as Record<string, unknown>)[key]
    if (value !== undefined) params[key] = check(value, key, fail, params as P)
  }
  return Object.freeze(params as P)
}

/**
 * An object of the options of `table` (keys in `ignored` aside) checked over its defaults and `base`; throws naming the
 * option.
 */
export function checkOptions<P extends object> (
  opts: unknown, table: object, fail: Fail, base: object = {}, ignored: readonly string[] = []
): P {
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) {
    throw fail('options', `expected an object, got ${describe(opts)}`)
  }
  const keys = Object.keys(table)
  const unknown = Object.keys(opts).find((key) => !keys.includes(key) && !ignored.includes(key))
  if (unknown !== undefined) throw fail(unknown, unknownKey(unknown, keys))
  const defaults = Object.fromEntries(Object.entries(table).map(([key, [, value]]) => [key, value]))
  return apply({ ...defaults, ...base } as P, opts, table, fail)
}

/**
 * Why `key` is not an option: the option of `valid` nearest to it ignoring case, if at most a third of the longer
 * length (at least 1) is edited (ties: the first), else the list.
 */
export function unknownKey (key: string, valid: readonly string[], kind = 'options'): string {
  const distance = (option: string): number => editDistance(key.toLowerCase(), option.toLowerCase())
  const limit = (option: string): number => Math.max(1, Math.floor(Math.max(key.length, option.length) / 3))
  const [nearest] = valid.filter((option) => distance(option) <= limit(option))
    .sort((x, y) => distance(x) - distance(y))
  return nearest === undefined
    ? `unknown option (${kind}: ${valid.join(', ')})`
    : `unknown option; did you mean ${JSON.stringify(nearest)}?`
}

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps (`verfiy`) cost 1. */
export function editDistance (a: string, b: string): number {
  // The (a.length + 1) × (b.length + 1) table, row by row: at(i, j) is the distance of a's first i and b's first j
  // characters.
  const table: number[] = []
  const at = (i: number, j: number): number => table[i * (b.length + 1) + j] as number
  for (let i = 0; i <= a.length; i++) {
    for (let j = 0; j <= b.length; j++) {
      let best = i + j
      if (i > 0 && j > 0) {
        const substitution = at(i - 1, j - 1) + (a[i - 1] === b[j - 1] ? 0 : 1)
        best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, substitution)
      }
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1)
      table.push(best)
    }
  }
  return at(a.length, b.length)
}
