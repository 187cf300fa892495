// Comparing received digests with computed ones (docs/design.md, "Request verification"). Pure.
import { timingSafeEqual } from 'node:crypto'
import type { AlgorithmResult, DigestAlgorithm, DigestFieldName, DigestMap, FieldVerification } from '../../types/index'
import { ALGORITHMS, isDigestAlgorithm } from './algorithms'

/** Whether two digest values are the same octets, in constant time; values of different lengths are not. */
export function digestsEqual (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Values by key as base64 text (a multiple of 4 characters, padded). */
export type Texts = ReadonlyMap<string, string>

/** Whether padded base64 text (RFC 4648 §4) decodes to as many octets as `algorithm` gives (RFC 9530 §5). */
export const rightLength = (algorithm: DigestAlgorithm, text: string): boolean =>
  text.length / 4 * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0) === ALGORITHMS.get(algorithm)?.length

// Each received member: 'unsupported' when not enabled (ignored, RFC 9530 §2, §3), 'invalid-length', else compared
// with the computed one; none without a computed digest. `ok`: a match, no other failure. The text is compared as it
// is: a request's claim and its content both come from the client, so the time taken reveals nothing it does not
// know (docs/security.md). Texts that differ are compared again as octets: base64 with non-zero pad bits decodes to
// the same octets, and RFC 8941 §4.2.7 tells parsers to accept it.
export function verifyTexts (
  field: DigestFieldName, received: Texts, computed: Texts, enabled: readonly DigestAlgorithm[]
): FieldVerification {
  const results: AlgorithmResult[] = []
  let matched = false
  let failed = false
  for (const [algorithm, text] of received) {
    if (!isDigestAlgorithm(algorithm) || !enabled.includes(algorithm)) {
      results.push({ algorithm, outcome: 'unsupported' })
    } else if (!rightLength(algorithm, text)) {
      results.push({ algorithm, outcome: 'invalid-length' })
      failed = true
    } else {
      const expected = computed.get(algorithm)
      if (expected === undefined) continue
      const equal = expected === text || digestsEqual(Buffer.from(expected, 'base64'), Buffer.from(text, 'base64'))
      results.push({ algorithm, outcome: equal ? 'matched' : 'mismatched' })
      matched ||= equal
      failed ||= !equal
    }
  }
  return { field, ok: matched && !failed, results }
}

/** Octets as base64 text, by key. */
export const textsOf = (digests: ReadonlyMap<string, Buffer>): Map<string, string> =>
  new Map([...digests].map(([key, octets]) => [key, octets.toString('base64')]))

/** verifyTexts() of octets. */
export function verifyDigests (
  field: DigestFieldName, received: DigestMap, computed: ReadonlyMap<DigestAlgorithm, Buffer>,
  enabled: readonly DigestAlgorithm[]
): FieldVerification {
  return verifyTexts(field, textsOf(received), textsOf(computed), enabled)
}
