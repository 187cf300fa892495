// Choosing the algorithms of one response field from its Want-* preferences and the server's
// policy (RFC 9530 §4; docs/design.md, "Negotiation", whose steps selectAlgorithms follows). Pure.
import type { DigestAlgorithm, SelectionInput, WantMap } from '../../types/index'
import { serializeWantField } from './fields'

// The candidate with the highest positive weight; ties go to the earlier one (server order).
function preferred (candidates: readonly DigestAlgorithm[], want: WantMap | null | undefined): DigestAlgorithm | undefined {
  if (want == null) return undefined
  let best: DigestAlgorithm | undefined
  let bestWeight = 0
  for (const algorithm of candidates) {
    const weight = want.get(algorithm)
    if (weight !== undefined && weight > bestWeight) {
      best = algorithm
      bestWeight = weight
    }
  }
  return best
}

/** The algorithms to send in one field, in server order (empty: omit it), by design.md's steps. */
export function selectAlgorithms ({ algorithms, want, unsolicited }: SelectionInput): DigestAlgorithm[] {
  const candidates = want == null ? algorithms : algorithms.filter((algorithm) => want.get(algorithm) !== 0)
  const wanted = preferred(candidates, want)
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
