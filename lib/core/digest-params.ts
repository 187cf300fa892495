// The normalized options one route's hooks read, frozen (built by lib/plugin/plugin-options.ts).
import type { DigestAlgorithm, DigestFieldsHook, VerifyPolicy } from '../../types/index'
import type { IntegrityKeys, IntegritySignature } from './integrity'

export interface DigestParams {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
  /** contentDigest, reprDigest, unencodedDigest: the algorithms sent unsolicited (empty: only when wanted). */
  readonly contentDigest: readonly DigestAlgorithm[]
  readonly reprDigest: readonly DigestAlgorithm[]
  readonly unencodedDigest: readonly DigestAlgorithm[]
  readonly verify: VerifyPolicy
  readonly strict: boolean
  readonly trailers: boolean
  readonly maxBufferSize: number
  /** Media types or ranges (lowercase, no parameters) of live streams. */
  readonly liveTypes: ReadonlySet<string>
  /** The route's `live` option, or null to go by `liveTypes`. */
  readonly live: boolean | null
  readonly conditional: boolean
  readonly legacyDigest: boolean
  /** fileCacheSize, fileHashing, fileSidecars, integrityKeys: plugin-level only. */
  readonly fileCacheSize: number
  readonly fileHashing: 'wait' | 'background'
  readonly fileSidecars: boolean
  /** Ed25519 keys for signature-based SRI, by keyid. */
  readonly integrityKeys: IntegrityKeys
  readonly integritySignature: IntegritySignature | null
  readonly onDigestFields: DigestFieldsHook | null
}
