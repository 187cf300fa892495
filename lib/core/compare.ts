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

// Whether two base64 texts are the same, in a time that does not depend on where they differ.
function sameText (a: string, b: string): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/** The number of octets padded base64 text decodes to (RFC 4648 §4). */
const decodedLength = (text: string): number =>
  text.length / 4 * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0)

// Each received member: 'unsupported' when not enabled (ignored, RFC 9530 §2, §3), 'invalid-length', else compared
// in constant time; none without a computed digest. `ok`: a match, no other failure. Texts that differ are compared
// again as octets: a sender's base64 may have non-zero pad bits, which RFC 8941 §4.2.7 tells parsers to accept.
export function verifyTexts (field: DigestFieldName, received: Texts, computed: Texts, enabled: readonly DigestAlgorithm[]): FieldVerification {
  const results: AlgorithmResult[] = []
  let matched = false
  let failed = false
  for (const [algorithm, text] of received) {
    if (!isDigestAlgorithm(algorithm) || !enabled.includes(algorithm)) {
      results.push({ algorithm, outcome: 'unsupported' })
    } else if (decodedLength(text) !== ALGORITHMS.get(algorithm)?.length) {
      results.push({ algorithm, outcome: 'invalid-length' })
      failed = true
    } else {
      const expected = computed.get(algorithm)
      if (expected === undefined) continue
      const equal = sameText(expected, text) || digestsEqual(Buffer.from(expected, 'base64'), Buffer.from(text, 'base64'))
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
  field: DigestFieldName, received: DigestMap, computed: ReadonlyMap<DigestAlgorithm, Buffer>, enabled: readonly DigestAlgorithm[]
): FieldVerification {
  return verifyTexts(field, textsOf(received), textsOf(computed), enabled)
}
