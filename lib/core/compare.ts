// Comparing received digests with computed ones (docs/design.md, "Request verification"). Pure.
import { timingSafeEqual } from 'node:crypto'
import type { AlgorithmResult, DigestAlgorithm, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { ALGORITHMS, isDigestAlgorithm } from './algorithms'

/**
 * Whether two digest values are the same octets, compared in constant time.
 * Values of different lengths (a caller bug, or another algorithm's) are not
 * equal, instead of making timingSafeEqual throw.
 */
export function digestsEqual (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * The enabled algorithms present in a received field, in server order: what
 * the caller has to hash before calling verifyDigests.
 */
export function usableAlgorithms (received: DigestMap, enabled: readonly DigestAlgorithm[]): DigestAlgorithm[] {
  return enabled.filter((algorithm) => received.has(algorithm))
}

/**
 * Check every member of a received Content-Digest / Repr-Digest, in received
 * order:
 * * not an enabled algorithm → 'unsupported' (ignored by `ok`: recipients
 *   ignore algorithms they do not support, RFC 9530 §2, §3);
 * * enabled, but not the algorithm's length → 'invalid-length';
 * * otherwise compared in constant time → 'matched' or 'mismatched'.
 * A member the caller computed no digest for cannot be decided and is left
 * out of `results` (the caller hashes every usableAlgorithms() entry, so this
 * only happens through a caller bug, and then it cannot make `ok` true).
 * `ok`: at least one 'matched' and no 'mismatched' or 'invalid-length'.
 */
export function verifyDigests (
  field: DigestFieldName,
  received: DigestMap,
  computed: ReadonlyMap<DigestAlgorithm, Buffer>,
  enabled: readonly DigestAlgorithm[]
): FieldVerification {
  const results: AlgorithmResult[] = []
  let matched = false
  let failed = false
  for (const [algorithm, octets] of received) {
    if (!isDigestAlgorithm(algorithm) || !enabled.includes(algorithm)) {
      results.push({ algorithm, outcome: 'unsupported' })
      continue
    }
    if (octets.length !== ALGORITHMS.get(algorithm)?.length) {
      results.push({ algorithm, outcome: 'invalid-length' })
      failed = true
      continue
    }
    const expected = computed.get(algorithm)
    if (expected === undefined) continue
    if (digestsEqual(expected, octets)) {
      results.push({ algorithm, outcome: 'matched' })
      matched = true
    } else {
      results.push({ algorithm, outcome: 'mismatched' })
      failed = true
    }
  }
  return { field, ok: matched && !failed, results }
}
