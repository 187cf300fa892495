/// <reference types="node" />

// fastify-digest-fields/client: an undici 7 or 8 interceptor that checks the
// digest fields of responses (RFC 9530) as their bodies stream, and adds
// Content-Digest / Want-*-Digest to requests. It does not need fastify.
import type { Blob as NodeBlob } from 'node:buffer'
import type { FastifyError, FastifyErrorConstructor } from '@fastify/error'
import type { Dispatcher, FormData as UndiciFormData } from 'undici'
import type { DigestAlgorithm } from './algorithms'

/** The RFC 9530 §5 registry keys (the main entry's DigestAlgorithm, from the shared algorithms.d.ts). */
export type { DigestAlgorithm } from './algorithms'

/**
 * One algorithm, several (weights 10, 9, … in that order): Want-Content-Digest
 * and Want-Repr-Digest; or per field, Want-Unencoded-Digest included.
 */
export type WantOption =
  | DigestAlgorithm
  | readonly DigestAlgorithm[]
  | {
    /** Sent as Want-Content-Digest. */
    readonly content?: DigestAlgorithm | readonly DigestAlgorithm[]
    /** Sent as Want-Repr-Digest. */
    readonly repr?: DigestAlgorithm | readonly DigestAlgorithm[]
    /** Sent as Want-Unencoded-Digest (draft-ietf-httpbis-unencoded-digest). */
    readonly unencoded?: DigestAlgorithm | readonly DigestAlgorithm[]
  }

export interface DigestInterceptorOptions {
  /** Accepted algorithms; default `['sha-256', 'sha-512']`. Deprecated keys only when listed. */
  algorithms?: readonly DigestAlgorithm[]
  /** `'if-present'` (default) checks the digests a response carries; `'required'` also fails a response without one. */
  verify?: 'if-present' | 'required'
  /** RFC 9530 to the letter: a coded response's Repr-Digest is over the coded bytes only. Default false. */
  strict?: boolean
  /**
   * What a coded response's Repr-Digest may be the digest of: `'either'` (default) the coded or
   * the decoded bytes; `'decoded'` only the decoded ones (a server in the plugin's default mode:
   * the coded bytes are not hashed for it); `'coded'` only the coded ones (what `strict: true` implies).
   */
  reprDigest?: 'either' | 'decoded' | 'coded'
  /** Ask for digests: Want-Content-Digest, Want-Repr-Digest and/or Want-Unencoded-Digest on every request. */
  want?: WantOption
  /** The most decoded bytes hashed for a coded response's Unencoded-Digest and default-mode Repr-Digest; default 64 MiB. */
  maxDecodedSize?: number
  /**
   * Pass a response that would fail with `FST_DIGEST_RESPONSE_REENCODED`: its Content-Digest (and a
   * Repr-Digest read over the coded bytes) does not match the coded bytes received, while a
   * Repr-Digest or Unencoded-Digest matched the decoded content and none mismatched it. Weaker than
   * a Content-Digest match: only the decoded content is proven, not the coding nor the bytes on the
   * wire. A function is called with that error (Content-Digest not verified) and the response passes;
   * what it throws fails the response instead. Default false.
   */
  acceptReencoded?: boolean | ((reencoded: DigestClientError) => void)
}

export type DigestClientErrorCode =
  | 'FST_DIGEST_RESPONSE_MISMATCH'
  | 'FST_DIGEST_RESPONSE_REENCODED'
  | 'FST_DIGEST_RESPONSE_INVALID_VALUE'
  | 'FST_DIGEST_RESPONSE_INVALID_FIELD'
  | 'FST_DIGEST_RESPONSE_MISSING'
  | 'FST_DIGEST_RESPONSE_UNCHECKED'
  | 'FST_DIGEST_REQUEST_REJECTED'
  | 'FST_DIGEST_NOT_ACCEPTABLE'

/** What a failed response's body errors with (itself, or as the `cause` of fetch's TypeError). */
export interface DigestClientError extends FastifyError {
  code: DigestClientErrorCode
  /** The field at fault: 'Content-Digest', 'Repr-Digest', 'Unencoded-Digest', or all three names for a missing digest. */
  field: string
  /** The algorithm at fault, or null when none could be named. */
  algorithm: string | null
  /** FST_DIGEST_RESPONSE_REENCODED: the fields that matched the decoded content ('Repr-Digest', 'Unencoded-Digest'). */
  matched?: readonly string[]
}

/** An interceptor for `dispatcher.compose()`. */
export function digestInterceptor (options?: DigestInterceptorOptions): Dispatcher.DispatcherComposeInterceptor

/** Bodies whose Content-Digest can be computed up front. */
export type DigestibleBody = string | ArrayBuffer | ArrayBufferView

/** A FormData: the global class, or undici's (its `request` takes only its own). */
export type DigestibleForm = FormData | UndiciFormData

/**
 * A FormData's serialization: a Blob of Node.js, which is both the global
 * Blob and node:buffer's, so it fits the body of the global fetch (the DOM
 * lib's Blob, when that lib is loaded) and of undici's fetch (node:buffer's).
 */
export type SerializedForm = Blob & NodeBlob

/** What digestBody() gives: the body to send and the fields to send with it. */
export interface DigestedBody<B = DigestibleBody | Blob> {
  /** The body given, or a FormData's multipart/form-data serialization. */
  body: B
  headers: {
    'content-digest': string
    /** With `{ unencoded: true }`: the same value (the content is sent with no content coding). */
    'unencoded-digest'?: string
    /** For a FormData: multipart/form-data with the boundary of `body`. */
    'content-type'?: string
  }
}

/** digestHeaders()'s and digestBody()'s options. */
export interface DigestHeadersOptions {
  /**
   * Also give `unencoded-digest` (draft-ietf-httpbis-unencoded-digest): the
   * same value, for content sent without a Content-Encoding. Default false.
   */
  unencoded?: boolean
}

/**
 * The body and `{ 'content-digest', 'content-type'? }` for fetch, for bytes,
 * a Blob (hashed as a stream) or a FormData (serialized to a Blob first).
 * Bytes and Blobs are given back as they are, with their own type.
 */
export function digestBody<B extends DigestibleBody | Blob | DigestibleForm> (
  body: B,
  algorithm?: DigestAlgorithm | readonly DigestAlgorithm[],
  options?: DigestHeadersOptions
): Promise<DigestedBody<B extends DigestibleForm ? SerializedForm : B>>

/**
 * `{ 'content-digest': 'sha-256=:…:' }` for a body sent with fetch (which
 * hands the dispatcher every body as a stream): spread it into the headers.
 */
export function digestHeaders (body: DigestibleBody, algorithm?: DigestAlgorithm | readonly DigestAlgorithm[]): { 'content-digest': string }
/** With `{ unencoded: true }`, `unencoded-digest` too: the same value (content sent without a Content-Encoding). */
export function digestHeaders (body: DigestibleBody, algorithm: DigestAlgorithm | readonly DigestAlgorithm[] | undefined, options: { unencoded: true }): { 'content-digest': string, 'unencoded-digest': string }
export function digestHeaders (body: DigestibleBody, algorithm?: DigestAlgorithm | readonly DigestAlgorithm[], options?: DigestHeadersOptions): { 'content-digest': string, 'unencoded-digest'?: string }

export const clientErrors: { readonly [K in DigestClientErrorCode]: FastifyErrorConstructor<{ code: K }> }
