// The 406 rule (docs/design.md, "The 406 rule"): a GET or HEAD whose
// Repr-Digest names another representation than the current one gets 406
// with the current Repr-Digest. The plugin's own rule: RFC 9530 §2 leaves
// open what a server does with a request's Repr-Digest. Pure; the answer is
// lib/plugin/response/emit.ts's.
import type { DigestAlgorithm } from '../../types/index'
import { FST_DIGEST_STALE_REPRESENTATION } from './errors'
import { parseDigestField } from './fields'
import { blankProblem } from './problem'
import { digestsEqual } from './compare'

const stale = new FST_DIGEST_STALE_REPRESENTATION()

/**
 * The 406's content: RFC 9457 problem details, `about:blank` titled by the
 * status as the plugin's other problems without a draft type
 * (lib/core/problem.ts), with the FST_DIGEST_* code.
 */
export const STALE_PROBLEM: Buffer = Buffer.from(JSON.stringify(blankProblem(406, stale.code, stale.message)))

/** The request's Repr-Digest members for the enabled algorithms. */
export type Precondition = ReadonlyMap<DigestAlgorithm, Buffer>

/** The precondition of a GET or HEAD, or null (none, none usable, or unparseable). */
export function preconditionOf (
  method: string, header: string | string[] | undefined, algorithms: readonly DigestAlgorithm[]
): Precondition | null {
  if (header === undefined || (method !== 'GET' && method !== 'HEAD')) return null
  let received
  try {
    received = parseDigestField(header, 'Repr-Digest')
  } catch {
    // A precondition that cannot be parsed cannot be evaluated: ignore it (RFC 8941 §4.2).
    return null
  }
  if (received === null) return null
  const out = new Map<DigestAlgorithm, Buffer>()
  for (const a of algorithms) {
    const v = received.get(a)
    if (v !== undefined) out.set(a, v)
  }
  return out.size > 0 ? out : null
}

/** The algorithm of the 406 response's Repr-Digest: sha-256, else the server's first. */
export function preconditionAlgorithm (algorithms: readonly DigestAlgorithm[]): DigestAlgorithm {
  return algorithms.includes('sha-256') ? 'sha-256' : algorithms[0] as DigestAlgorithm
}

/**
 * Whether a response of `status` whose representation has the digests
 * `repr` fails the precondition: a member names another value. Only a
 * successful response stands for the target's current representation, and
 * a member whose digest is unknown decides nothing.
 */
export function preconditionFails (precondition: Precondition | null, status: number, repr: ReadonlyMap<DigestAlgorithm, Buffer> | null): boolean {
  if (precondition === null || repr === null || status < 200 || status > 299) return false
  for (const [a, expected] of precondition) {
    const actual = repr.get(a)
    if (actual === undefined) return false
    if (!digestsEqual(actual, expected)) return true
  }
  return false
}
