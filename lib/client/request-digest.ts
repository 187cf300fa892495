// Content-Digest for request content (RFC 9530 §2: the digest of the content
// as sent). Computed up front, so only for bodies whose bytes are known when
// the request is dispatched: strings (sent as UTF-8, as undici does),
// ArrayBuffers and typed arrays (Buffers included). Streams, iterables,
// FormData and Blobs are sent as they are, unless the caller gives the field
// (digestHeaders() for bytes sent through fetch, which hands the dispatcher
// every body as a stream).
import type { DigestAlgorithm, DigestibleBody } from '../../types/client'
import { ALGORITHMS } from '../algorithms'
import { FST_DIGEST_UNKNOWN_ALGORITHM } from '../errors'
import { digestFieldOf } from '../fields'

/** A body's bytes (or text, hashed as UTF-8) when known up front; else null. */
export function knownBytes (body: unknown): Uint8Array | string | null {
  if (typeof body === 'string') return body
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  return null
}

/**
 * `{ 'content-digest': … }` for a body whose bytes are known, for the
 * headers of a fetch() call (or any client). `algorithm` is one key or a
 * list (default sha-256); the deprecated keys work here too, for servers
 * that ask for them.
 */
export function digestHeaders (
  body: DigestibleBody,
  algorithm: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256'
): { 'content-digest': string } {
  const bytes = knownBytes(body)
  if (bytes === null) throw new TypeError('digestHeaders() takes a string, an ArrayBuffer or a typed array (Buffer, Uint8Array, …)')
  const algorithms: readonly DigestAlgorithm[] = typeof algorithm === 'string' ? [algorithm] : algorithm
  if (algorithms.length === 0) throw new TypeError('digestHeaders() needs at least one algorithm')
  for (const key of algorithms) {
    if (!ALGORITHMS.has(key)) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(key))
  }
  // Byte Sequences throughout (the strict serialization): every RFC 9530
  // recipient reads them, also for unixsum/unixcksum.
  return { 'content-digest': digestFieldOf(algorithms, bytes, true) as string }
}
