// The normalized options one route's hooks read (built by lib/plugin/plugin-options.ts,
// frozen, never re-checked per request). Pure: no fastify import, so the
// response plan (lib/core/response-plan.ts) can take it.
import type { DigestAlgorithm, DigestFieldsHook, VerifyPolicy } from '../../types/index'
import type { IntegrityKeys, IntegritySignature } from './integrity'

export interface DigestParams {
  /** Enabled algorithms, server preference order. */
  readonly algorithms: readonly DigestAlgorithm[]
  /** Unsolicited Content-Digest algorithms (empty: only when wanted). */
  readonly contentDigest: readonly DigestAlgorithm[]
  /** Unsolicited Repr-Digest algorithms (empty: only when wanted). */
  readonly reprDigest: readonly DigestAlgorithm[]
  /** Unsolicited Unencoded-Digest algorithms (empty: only when wanted). */
  readonly unencodedDigest: readonly DigestAlgorithm[]
  readonly verify: VerifyPolicy
  readonly strict: boolean
  readonly trailers: boolean
  readonly maxBufferSize: number
  /** Media types (lowercase, no parameters) of live streams. */
  readonly liveTypes: ReadonlySet<string>
  /** The route's `live` option: true or false, or null to go by `liveTypes`. */
  readonly live: boolean | null
  readonly conditional: boolean
  readonly legacyDigest: boolean
  /** How many files' whole-file digests are kept (plugin-level only). */
  readonly fileCacheSize: number
  /** A file whose digests are not known yet: hashed before answering, or in the background (plugin-level only). */
  readonly fileHashing: 'wait' | 'background'
  /** Read whole-file digests from sidecar checksum files (plugin-level only). */
  readonly fileSidecars: boolean
  /** Ed25519 keys for signature-based SRI, by keyid (plugin-level only; empty: none). */
  readonly integrityKeys: IntegrityKeys
  /** The signature sent without being asked (`integritySignature`), or null. */
  readonly integritySignature: IntegritySignature | null
  /** Called with the final digest fields; its fields are added next to them (lib/plugin/response/field-hook.ts). */
  readonly onDigestFields: DigestFieldsHook | null
}
