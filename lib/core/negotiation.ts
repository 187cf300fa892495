// Choosing the algorithms for one response field (Content-Digest or
// Repr-Digest) from the Want-* preferences and the server's policy
// (docs/design.md, "Negotiation"; RFC 9530 §4). Pure: no fastify, no structured-headers here.
import type { DigestAlgorithm, SelectionInput, WantMap } from '../../types/index'
import { serializeWantField } from './fields'

// The candidate with the highest positive weight in `want`; ties go to the
// earlier candidate (server order). Unknown keys in `want` are never looked at.
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

/**
 * The algorithms to send in one field, in server order (empty: omit it).
 * Only the field's own Want-* counts: RFC 9530 §4 gives each Want-* field
 * the preference for its own field, and nothing ties one to the other.
 * Candidates are the enabled `algorithms` minus those the Want-* weights 0.
 * 1. The Want-* gives a candidate a positive weight: the highest weighted
 *    one, alone (it replaces the unsolicited default).
 * 2. Else, when the field is sent unsolicited: the unsolicited algorithms
 *    that are still candidates; when the Want-* refused every one of them,
 *    the first candidate (weight 0 is "not acceptable" for that algorithm,
 *    not "send nothing").
 * 3. Else nothing: a preference is only a hint (RFC 9530 §4).
 */
export function selectAlgorithms ({ algorithms, want, unsolicited }: SelectionInput): DigestAlgorithm[] {
  const candidates = want == null ? algorithms : algorithms.filter((algorithm) => want.get(algorithm) !== 0)
  const wanted = preferred(candidates, want)
  if (wanted !== undefined) return [wanted]
  if (unsolicited === undefined || unsolicited.length === 0) return []
  const kept = candidates.filter((algorithm) => unsolicited.includes(algorithm))
  if (kept.length > 0 || candidates.length === 0) return kept
  // Nothing kept: every unsolicited algorithm that is enabled was refused.
  return unsolicited.some((algorithm) => algorithms.includes(algorithm)) ? [candidates[0] as DigestAlgorithm] : []
}

/**
 * The Want-* value advertising what the server accepts, weights descending
 * from 10 in server order (never below 1): ['sha-256', 'sha-512'] →
 * `sha-256=10, sha-512=9`.
 */
export function wantAdvertisement (algorithms: readonly DigestAlgorithm[]): string {
  return serializeWantField(algorithms.map((algorithm, index) => [algorithm, Math.max(10 - index, 1)] as const))
}
