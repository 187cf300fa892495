// Checks that the plugin's options and the client's share: the algorithm
// list (the deprecated keys only when listed) and how a wrong value is
// described in the error. Pure: no fastify.
import type { DigestAlgorithm } from '../../types/index'
import { ALGORITHMS } from './algorithms'

/** Builds the error for option `name` with `reason`. */
export type Fail = (name: string, reason: string) => Error

/** sha-256 and sha-512: the algorithms enabled when none are listed. */
export const defaultAlgorithms: readonly DigestAlgorithm[] = Object.freeze(['sha-256', 'sha-512'])

/** A value as an error message shows it. */
export function describe (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (Array.isArray(value)) return 'an array'
  return value === null ? 'null' : typeof value
}

/** The enabled algorithms: a non-empty list of registry keys without repeats (default: sha-256, sha-512). */
export function checkAlgorithms (value: unknown, fail: Fail): readonly DigestAlgorithm[] {
  if (value === undefined) return defaultAlgorithms
  if (!Array.isArray(value) || value.length === 0) {
    throw fail('algorithms', `expected a non-empty array of algorithm keys, got ${describe(value)}`)
  }
  const seen = new Set<DigestAlgorithm>()
  for (const key of value) {
    if (!ALGORITHMS.has(key)) {
      throw fail('algorithms', `unknown algorithm ${describe(key)}; known: ${[...ALGORITHMS.keys()].join(', ')}`)
    }
    if (seen.has(key)) throw fail('algorithms', `${describe(key)} is listed twice`)
    seen.add(key)
  }
  return Object.freeze([...seen])
}
