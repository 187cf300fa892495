// Choosing the algorithms of one response field from its Want-* preferences and the server's
// policy (RFC 9530 §4; docs/design.md, "Negotiation", whose steps selectAlgorithms follows). Pure.
import type { DigestAlgorithm, SelectionInput } from '../../types/index'
import { serializeWantField } from './fields'

/** The algorithms to send in one field, in server order (empty: omit it), by design.md's steps. */
export function selectAlgorithms ({ algorithms, want, unsolicited }: SelectionInput): DigestAlgorithm[] {
  const candidates = want == null ? algorithms : algorithms.filter((algorithm) => want.get(algorithm) !== 0)
  // The candidate with the highest positive weight; ties go to the earlier one (server order).
  let wanted: DigestAlgorithm | undefined
  let wantedWeight = 0
  for (const algorithm of candidates) {
    const weight = want?.get(algorithm) ?? 0
    if (weight > wantedWeight) {
      wanted = algorithm
      wantedWeight = weight
    }
  }
  if (wanted !== undefined) return [wanted]
  if (unsolicited === undefined || unsolicited.length === 0) return []
  const kept = candidates.filter((algorithm) => unsolicited.includes(algorithm))
  if (kept.length > 0 || candidates.length === 0) return kept
  return unsolicited.some((algorithm) => algorithms.includes(algorithm)) ? [candidates[0] as DigestAlgorithm] : []
}

/** The Want-* value of what the server accepts: weights from 10 down in server order, never below 1. */
export function wantAdvertisement (algorithms: readonly DigestAlgorithm[]): string {
  return serializeWantField(algorithms.map((algorithm, index) => [algorithm, Math.max(10 - index, 1)] as const))
}
