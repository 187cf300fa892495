// Content-Digest for request content (RFC 9530 §2: the digest of the content
// as sent). Bytes known when the request is dispatched are hashed there:
// strings (sent as UTF-8, as undici does), ArrayBuffers and typed arrays
// (Buffers included). A Blob is hashed as a stream before the request goes
// out (its bytes are fixed: a Blob is immutable, and a file-backed one fails
// to read if its file changed), then sent as it is; a FormData is first
// serialized (./form-data.ts), then hashed and sent the same way. Streams and
// iterables are sent as they are, unless the caller gives the field.
// fetch hands the dispatcher every body as a stream: digestHeaders() and
// digestBody() compute the field for its headers, and with `{ unencoded:
// true }` an Unencoded-Digest too (draft-ietf-httpbis-unencoded-digest §3):
// the same value, content sent without a content coding being its own
// unencoded representation (Byte Sequences, as that field requires).
import type { DigestAlgorithm, DigestedBody, DigestHeadersOptions, DigestibleBody } from '../../types/client'
import { ALGORITHMS } from '../core/algorithms'
import { MultiDigester } from '../core/digest-stream'
import { FST_DIGEST_INVALID_OPTION, FST_DIGEST_UNKNOWN_ALGORITHM } from '../core/errors'
import { describe } from '../core/option-checks'
import { digestFieldOf, serializeDigestField } from '../core/fields'
import { formDataBlob, isFormData } from './form-data'

/** A body's bytes (or text, hashed as UTF-8) when known up front; else null. */
export function knownBytes (body: unknown): Uint8Array | string | null {
  if (typeof body === 'string') return body
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  return null
}

/** What is sent for a Blob or FormData body, once hashed. */
export interface PreparedBody {
  /** The body to send: the Blob itself, or the FormData's serialization. */
  body: Blob
  /** The Content-Type to send (a FormData's, with its boundary), or null to leave it. */
  contentType: string | null
  /** The Content-Digest value. */
  field: string
}

/** What can stop the hashing: the request's AbortSignal (undici also takes an EventEmitter, which has no `aborted`). */
interface Stop { aborted?: unknown }

/**
 * The Content-Digest of a Blob's bytes, read as a stream (Byte Sequences, as
 * for known bytes); null when `stop` was aborted on the way (the rest is not
 * read).
 */
async function blobField (blob: Blob, algorithms: readonly DigestAlgorithm[], stop: Stop | null | undefined): Promise<string | null> {
  const hasher = new MultiDigester(algorithms)
  for await (const chunk of blob.stream()) {
    if (stop?.aborted === true) return null
    hasher.update(chunk)
  }
  return serializeDigestField(hasher.digest(), { strict: true })
}

/**
 * For a Blob or FormData body, the body to send and its Content-Digest,
 * computed asynchronously (null once the request's signal aborted: the
 * request is then passed on as it is, for undici to abort); null for any
 * other body.
 */
export function prepareBody (body: unknown, algorithms: readonly DigestAlgorithm[], stop?: Stop | null): Promise<PreparedBody | null> | null {
  const blob = body instanceof Blob ? body : isFormData(body) ? formDataBlob(body) : null
  if (blob === null) return null
  const contentType = blob === body ? null : blob.type
  return blobField(blob, algorithms, stop).then((field) => field === null ? null : { body: blob, contentType, field })
}

function algorithmList (caller: string, algorithm: DigestAlgorithm | readonly DigestAlgorithm[]): readonly DigestAlgorithm[] {
  const algorithms: readonly DigestAlgorithm[] = typeof algorithm === 'string' ? [algorithm] : algorithm
  if (algorithms.length === 0) throw new TypeError(`${caller} needs at least one algorithm`)
  for (const key of algorithms) {
    if (!ALGORITHMS.has(key)) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(key))
  }
  return algorithms
}

/** Whether digestHeaders() or digestBody() also gives `unencoded-digest`; throws FST_DIGEST_INVALID_OPTION for a bad option. */
function wantsUnencoded (options: DigestHeadersOptions | undefined): boolean {
  if (options === undefined) return false
  if (options === null || typeof options !== 'object') throw new FST_DIGEST_INVALID_OPTION('options', `expected { unencoded }, got ${describe(options)}`)
  for (const key of Object.keys(options)) {
    if (key !== 'unencoded') throw new FST_DIGEST_INVALID_OPTION(key, 'unknown option (options: unencoded)')
  }
  const unencoded = options.unencoded ?? false
  if (typeof unencoded !== 'boolean') throw new FST_DIGEST_INVALID_OPTION('unencoded', `expected a boolean, got ${describe(unencoded)}`)
  return unencoded
}

function fields (field: string, unencoded: boolean): { 'content-digest': string, 'unencoded-digest'?: string } {
  return unencoded ? { 'content-digest': field, 'unencoded-digest': field } : { 'content-digest': field }
}

/**
 * `{ 'content-digest': … }` for a body whose bytes are known, for the
 * headers of a fetch() call (or any client). `algorithm` is one key or a
 * list (default sha-256); the deprecated keys work here too, for servers
 * that ask for them.
 */
export function digestHeaders (
  body: DigestibleBody,
  algorithm: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256',
  options?: DigestHeadersOptions
): { 'content-digest': string, 'unencoded-digest'?: string } {
  const bytes = knownBytes(body)
  if (bytes === null) throw new TypeError('digestHeaders() takes a string, an ArrayBuffer or a typed array (Buffer, Uint8Array, …); use digestBody() for a Blob or FormData')
  const algorithms = algorithmList('digestHeaders()', algorithm)
  // Byte Sequences throughout (the strict serialization): every RFC 9530
  // recipient reads them, also for unixsum/unixcksum.
  return fields(digestFieldOf(algorithms, bytes, true) as string, wantsUnencoded(options))
}

/**
 * The body to send and the headers that go with it, for any body whose
 * bytes are fixed: bytes as digestHeaders(), a Blob hashed as a stream, a
 * FormData serialized to a Blob (its Content-Type, with the boundary, in
 * the headers). For fetch(), which cannot be given the field any other way.
 */
export async function digestBody (
  body: DigestibleBody | Blob | FormData,
  algorithm: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256',
  options?: DigestHeadersOptions
): Promise<DigestedBody> {
  const algorithms = algorithmList('digestBody()', algorithm)
  const unencoded = wantsUnencoded(options)
  const bytes = knownBytes(body)
  if (bytes !== null) return { body: body as DigestibleBody, headers: fields(digestFieldOf(algorithms, bytes, true) as string, unencoded) }
  const prepared = prepareBody(body, algorithms)
  if (prepared === null) throw new TypeError('digestBody() takes a string, an ArrayBuffer, a typed array, a Blob or a FormData')
  const { body: blob, contentType, field } = await prepared as PreparedBody // no signal: never null
  const headers = fields(field, unencoded)
  return { body: blob, headers: contentType === null ? headers : { ...headers, 'content-type': contentType } }
}
