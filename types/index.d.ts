/// <reference types="node" />

import type { FastifyPluginCallback, FastifyReply, FastifyRequest, RawServerBase, RawServerDefault } from 'fastify'
import type { FastifyError, FastifyErrorConstructor } from '@fastify/error'
import type { KeyObject } from 'node:crypto'
import type { Stats } from 'node:fs'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { DigestAlgorithm as RegistryKey } from './algorithms'

declare module 'fastify' {
  interface RouteShorthandOptions<
    // eslint-disable-next-line @typescript-eslint/no-unused-vars
    RawServer extends RawServerBase = RawServerDefault
  > {
    /** Per-route digest settings; `false` turns the plugin off for this route. */
    digest?: fastifyDigestFields.RouteDigestOptions | false
  }

  interface RouteOptions {
    digest?: fastifyDigestFields.RouteDigestOptions | false
  }

  interface FastifyRequest {
    /**
     * What the plugin verified of this request's digest fields. `null` until
     * the body has been read (or when the plugin is off for the route).
     */
    digestVerification: fastifyDigestFields.DigestVerification | null
  }

  interface FastifyReply {
    /**
     * Declare known digests of the selected representation (e.g. a stored
     * checksum). They are used for Repr-Digest, 206, HEAD and the 406 rule
     * instead of hashing. Values are raw octets (Buffer) or, for unixsum and
     * unixcksum, their numeric value.
     */
    setReprDigest (digests: fastifyDigestFields.DeclaredDigests): FastifyReply
    /**
     * Declare known digests of the representation with no content coding
     * (Unencoded-Digest, draft-ietf-httpbis-unencoded-digest), for a route
     * that sends coded bytes of its own (its own Content-Encoding). Without
     * a coding of the route's own, the digests of `setReprDigest()` are the
     * unencoded ones too. Values as for `setReprDigest()`.
     */
    setUnencodedDigest (digests: fastifyDigestFields.DeclaredDigests): FastifyReply
    /**
     * The digest fields this response was meant to carry but does not, and
     * why; `null` when none was left out. Set by the plugin's onSend hooks:
     * read it from `onResponse` (or an onSend hook added after the plugin's).
     */
    readonly digestsOmitted: fastifyDigestFields.DigestOmission | null
  }
}

type FastifyDigestFields = FastifyPluginCallback<fastifyDigestFields.FastifyDigestFieldsOptions>

declare namespace fastifyDigestFields {
  /** The keys of the IANA "Hash Algorithms for HTTP Digest Fields" registry (RFC 9530 §5). */
  export type DigestAlgorithm = RegistryKey

  export type ActiveAlgorithm = 'sha-256' | 'sha-512'
  export type DeprecatedAlgorithm = Exclude<DigestAlgorithm, ActiveAlgorithm>

  /** Unsolicited digest setting: off, the first enabled algorithm, or named algorithms. */
  export type UnsolicitedDigest = boolean | DigestAlgorithm | readonly DigestAlgorithm[]

  export type VerifyPolicy = 'if-present' | 'required' | false

  export interface FastifyDigestFieldsOptions {
    /** Enabled algorithms, in server preference order. Default `['sha-256', 'sha-512']`. */
    algorithms?: readonly DigestAlgorithm[]
    /** Send Content-Digest without being asked. Default `false`. */
    contentDigest?: UnsolicitedDigest
    /** Send Repr-Digest without being asked. Default `false`. */
    reprDigest?: UnsolicitedDigest
    /** Request verification policy. Default `'if-present'`. */
    verify?: VerifyPolicy
    /** Follow RFC 9530 to the letter (content coding is part of the representation). Default `false`. */
    strict?: boolean
    /**
     * Send Unencoded-Digest (the digest of the representation with no content
     * coding, draft-ietf-httpbis-unencoded-digest) without being asked, in
     * either mode. Default `false`.
     */
    unencodedDigest?: UnsolicitedDigest
    /** Streamed bodies: send digests as trailers when the client allows them. Default `true`. */
    trailers?: boolean
    /** Streamed bodies: buffer up to this many bytes to send digests as headers. Default 1 MiB. */
    maxBufferSize?: number
    /**
     * Media types of live streams (event streams, NDJSON, ...), never held
     * back for a digest: their digests go in trailers when the client allows
     * them, else none. Parameters of the response's Content-Type are ignored.
     * Media ranges (RFC 9110 §12.5.1) match too: `text/*` every text subtype,
     * the range of all types every stream.
     * Replaces the default list: `text/event-stream`, `application/x-ndjson`,
     * `application/jsonl`, `application/json-seq`, `multipart/x-mixed-replace`.
     */
    liveTypes?: readonly string[]
    /** Answer 406 to a GET/HEAD whose Repr-Digest does not match. Default `true`. */
    conditional?: boolean
    /**
     * Add `no-transform` to `Cache-Control` (kept with the directives the
     * route set) on responses that carry a digest field, so that an
     * intermediary that honours it does not compress or otherwise change
     * the content the fields describe (RFC 9110 §7.7). Default `true`.
     */
    noTransform?: boolean
    /** Also verify the RFC 3230 `Digest` request header. Default `false`. */
    legacyDigest?: boolean
    /**
     * Files served with @fastify/static: how many files' whole-file digests
     * are kept (least recently used out; 0 keeps none). Default `1000`.
     */
    fileCacheSize?: number
    /**
     * Files served with @fastify/static whose whole-file digests are not
     * known yet: `'wait'` hashes the file before answering; `'background'`
     * answers at once without them (`reply.digestsOmitted`) and hashes the
     * file for later requests. Default `'wait'`.
     */
    fileHashing?: 'wait' | 'background'
    /**
     * Files served with @fastify/static: take whole-file digests from
     * checksum files next to them (`app.js.sha256`, `app.js.sha512`, as
     * `sha256sum` prints them) written after the file, each checked against
     * the file in the background. `'verified'`: used only once that check
     * confirmed them. Default `false`.
     */
    fileSidecars?: boolean | 'verified'
    /**
     * Ed25519 private keys (KeyObjects or PEM strings) for signature-based
     * SRI (WICG signature-based-sri): a request whose `Accept-Signature` asks
     * for one of them (`keyid`, the base64 of the raw public key, as a page's
     * `integrity="ed25519-…"` names it) gets `Unencoded-Digest`,
     * `Signature-Input` and `Signature`. Default: none.
     */
    integrityKeys?: KeyObject | string | ReadonlyArray<KeyObject | string>
    /**
     * Sign without being asked: `true` with the first of `integrityKeys`, a
     * keyid with that key, or `{ keyid, label }` (label default `sig0`).
     * Default `false`.
     */
    integritySignature?: boolean | string | IntegritySignatureOption
    /**
     * Called once a response's digest fields are final, before they are
     * written; may be async. The fields it returns are added in the same
     * section (headers, or trailers): e.g. an RFC 9421 signature covering
     * Content-Digest. Not called for a response that carries no digest field.
     */
    onDigestFields?: DigestFieldsHook
  }

  /** An unsolicited signature: the key (`true`: the first of `integrityKeys`) and the label (default `sig0`). */
  export interface IntegritySignatureOption {
    keyid?: string | true
    label?: string
  }

  /** The digest fields of a response, serialized, by lowercase name: those it carries. */
  export type DigestFieldValues = Readonly<Partial<Record<'content-digest' | 'repr-digest' | 'unencoded-digest', string>>>

  /** Fields to add next to the digest fields, by name (none: `undefined` or `null`); a list is sent as one comma-separated value. */
  export type AddedFields = Record<string, string | readonly string[]> | undefined | null | void

  /** The onDigestFields option: a signer, or anything that needs the final digest fields. */
  export type DigestFieldsHook = (
    request: FastifyRequest, reply: FastifyReply, fields: DigestFieldValues
  ) => AddedFields | Promise<AddedFields>

  /** The options a route may override through its `digest` route option. */
  export type RouteDigestOptions = Pick<
    FastifyDigestFieldsOptions,
    'contentDigest' | 'reprDigest' | 'unencodedDigest' | 'verify' | 'maxBufferSize' | 'conditional' | 'noTransform' | 'trailers' | 'legacyDigest' |
    'integritySignature' | 'onDigestFields'
  > & {
    /**
     * `true`: the route's streamed responses are live streams (never held
     * back for a digest); `false`: they never are, whatever their media type.
     * Default: by `liveTypes`.
     */
    live?: boolean
  }

  /** A response digest field the plugin can send. */
  export type ResponseDigestField = 'Content-Digest' | 'Repr-Digest' | 'Unencoded-Digest'

  /**
   * Why digest fields that were asked for (Want-*) or configured were left
   * out of a response: a live stream without trailers (or the HEAD of one),
   * a stream larger than `maxBufferSize` without trailers, or a static file
   * not hashed yet (`fileHashing: 'background'`).
   */
  export interface DigestOmission {
    reason: 'live-stream' | 'over-max-buffer-size' | 'file-not-hashed'
    /** `Signature`: an SRI signature asked for (or configured), which needs Unencoded-Digest as a header. */
    fields: Array<ResponseDigestField | 'Signature'>
  }

  export type DeclaredDigests = Partial<Record<DigestAlgorithm, Buffer | Uint8Array | number>>

  export type DigestFieldName = 'Content-Digest' | 'Repr-Digest' | 'Unencoded-Digest' | 'Digest'

  export type AlgorithmOutcome = 'matched' | 'mismatched' | 'invalid-length' | 'unsupported'

  export interface AlgorithmResult {
    algorithm: string
    outcome: AlgorithmOutcome
  }

  export interface FieldVerification {
    field: DigestFieldName
    /** True when at least one algorithm matched and none failed. */
    ok: boolean
    results: AlgorithmResult[]
  }

  export interface DigestVerification {
    /**
     * `true`: every usable digest the request carried matched;
     * `false`: the body was not checked (no usable digest, or it was consumed
     * outside the verifier, e.g. from `request.raw`), or a check failed.
     */
    verified: boolean
    /**
     * Why `verified` is false. `'failed'` is only seen by code running after
     * a failed check, e.g. a stream-passing handler whose stream errored.
     */
    reason?: 'no-digest' | 'no-body' | 'unread' | 'disabled' | 'failed'
    fields: FieldVerification[]
  }

  /** An incremental digester: feed chunks with `update`, read raw octets with `digest` once. */
  export interface Digester {
    readonly algorithm: DigestAlgorithm
    update (data: Buffer | Uint8Array | string): this
    digest (): Buffer
  }

  export interface SerializeOptions {
    /** Strict mode writes unixsum/unixcksum as Byte Sequences instead of Integers. */
    strict?: boolean
  }

  /** A parsed Content-Digest / Repr-Digest: algorithm key → raw octets (unknown keys kept). */
  export type DigestMap = Map<string, Buffer>

  /** A parsed Want-*-Digest: algorithm key → weight 0..10 (unknown keys kept). */
  export type WantMap = Map<string, number>

  export interface SelectionInput {
    /** Enabled algorithms in server preference order. */
    algorithms: readonly DigestAlgorithm[]
    /** The Want-* preferences the field follows, if any: its own, or the other field's when it has none (docs/design.md, "Negotiation"). */
    want?: WantMap | null
    /** Algorithms to send unsolicited for this field (empty: none). */
    unsolicited?: readonly DigestAlgorithm[]
  }

  export const ALGORITHMS: ReadonlyMap<DigestAlgorithm, {
    readonly key: DigestAlgorithm
    readonly status: 'active' | 'deprecated'
    readonly length: number
  }>

  export function isDigestAlgorithm (key: unknown): key is DigestAlgorithm
  export function computeDigest (algorithm: DigestAlgorithm, data: Buffer | Uint8Array | string): Buffer
  export function createDigester (algorithm: DigestAlgorithm): Digester

  /**
   * Parse Content-Digest / Repr-Digest / Unencoded-Digest (a field as Node.js or
   * fetch's `headers.get()` gives it; null when absent; `field` names it:
   * Unencoded-Digest values are Byte Sequences only); throws
   * FST_DIGEST_INVALID_FIELD when malformed.
   */
  export function parseDigestField (value: string | readonly string[] | null | undefined, field?: string): DigestMap | null
  export function serializeDigestField (digests: Iterable<readonly [DigestAlgorithm, Buffer]>, options?: SerializeOptions): string
  /** Parse Want-*-Digest; returns null for absent or invalid fields (ignored, RFC 8941 §4.2). */
  export function parseWantField (value: string | readonly string[] | null | undefined): WantMap | null
  export function serializeWantField (preferences: Iterable<readonly [string, number]>): string
  /** Parse an RFC 3230 `Digest` header (legacy); unknown algorithms ignored. */
  export function parseLegacyDigest (value: string | readonly string[] | null | undefined): DigestMap | null

  export function selectAlgorithms (input: SelectionInput): DigestAlgorithm[]
  export function verifyDigests (
    field: DigestFieldName,
    received: DigestMap,
    computed: ReadonlyMap<DigestAlgorithm, Buffer>,
    enabled: readonly DigestAlgorithm[]
  ): FieldVerification

  export type DigestErrorCode =
    | 'FST_DIGEST_INVALID_OPTION'
    | 'FST_DIGEST_INVALID_ROUTE_OPTION'
    | 'FST_DIGEST_ALREADY_REGISTERED'
    | 'FST_DIGEST_UNKNOWN_ALGORITHM'
    | 'FST_DIGEST_INVALID_DECLARED_DIGEST'
    | 'FST_DIGEST_INVALID_FIELD'
    | 'FST_DIGEST_MISMATCH'
    | 'FST_DIGEST_INVALID_VALUE'
    | 'FST_DIGEST_UNSUPPORTED_ALGORITHM'
    | 'FST_DIGEST_MISSING'
    | 'FST_DIGEST_UNSUPPORTED_ENCODING'
    | 'FST_DIGEST_INVALID_ENCODING'
    | 'FST_DIGEST_CONTENT_TOO_LARGE'
    | 'FST_DIGEST_UNREAD_TOO_LARGE'
    | 'FST_DIGEST_TRAILER_UNANNOUNCED'
    | 'FST_DIGEST_INCOMPLETE'
    | 'FST_DIGEST_SIDECAR_WRONG'
    | 'FST_DIGEST_FILE_CHANGED'
    | 'FST_DIGEST_FIELD_HOOK_FAILED'
    | 'FST_DIGEST_STALE_REPRESENTATION'

  /**
   * @fastify/static's `setHeaders` option (`setHeaders: staticHeaders`; with
   * headers of your own, call it from your function with the same arguments).
   * It tells the plugin which file and stat a response stands for, so HEAD
   * and 206 responses carry the whole file's Repr-Digest.
   */
  export function staticHeaders (reply: FastifyReply | ServerResponse | Http2ServerResponse, path: string, stat: Stats): void

  export const errors: { readonly [K in DigestErrorCode]: FastifyErrorConstructor<{ code: K }> }
  export type DigestError = FastifyError

  export const fastifyDigestFields: FastifyDigestFields
  export { fastifyDigestFields as default }
}

declare function fastifyDigestFields (...params: Parameters<FastifyDigestFields>): ReturnType<FastifyDigestFields>
export = fastifyDigestFields
