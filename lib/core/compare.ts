// Comparing received digests with computed ones (docs/design.md, "Request verification"). Pure.
import { timingSafeEqual } from 'node:crypto'
import type { AlgorithmResult, DigestAlgorithm, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { ALGORITHMS, isDigestAlgorithm } from './algorithms'

/** Whether two digest values are the same octets, in constant time; values of different lengths are not. */
export function digestsEqual (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

// Each received member: 'unsupported' when not enabled (ignored, RFC 9530 §2, §3), 'invalid-length', else compared
// in constant time; none without a computed digest. `ok`: a match, no other failure.
export function verifyDigests (
  field: DigestFieldName, received: DigestMap, computed: ReadonlyMap<DigestAlgorithm, Buffer>, enabled: readonly DigestAlgorithm[]
): FieldVerification {
  const results: AlgorithmResult[] = []
  let matched = false
  let failed = false
  for (const [algorithm, octets] of received) {
    if (!isDigestAlgorithm(algorithm) || !enabled.includes(algorithm)) {
      results.push({ algorithm, outcome: 'unsupported' })
    } else if (octets.length !== ALGORITHMS.get(algorithm)?.length) {
      results.push({ algorithm, outcome: 'invalid-length' })
      failed = true
    } else {
      const expected = computed.get(algorithm)
      if (expected === undefined) continue
      const equal = digestsEqual(expected, octets)
      results.push({ algorithm, outcome: equal ? 'matched' : 'mismatched' })
      matched ||= equal
      failed ||= !equal
    }
  }
  return { field, ok: matched && !failed, results }
}
