// The 406 rule (docs/design.md): a GET or HEAD whose Repr-Digest names another representation
// than the current one gets 406 with the current Repr-Digest (the plugin's own: RFC 9530 leaves it open).
import type { DigestAlgorithm } from '../../types/index'
import { FST_DIGEST_STALE_REPRESENTATION } from './errors'
import { parseDigestField } from './fields'
import { blankProblem } from './problem'
import { digestsEqual } from './compare'

const stale = new FST_DIGEST_STALE_REPRESENTATION()

/** The 406's content: RFC 9457 problem details, `about:blank` as the plugin's other problems (problem.ts). */
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
    return null // unparseable: ignored (RFC 8941 §4.2)
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
 * Whether a response whose representation has the digests `repr` fails: a member names another
 * value. Only a 2xx stands for the current representation; a member whose digest is unknown decides nothing.
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
