// Content-Digest of request content as sent (RFC 9530 §2): bytes at once, a Blob hashed as a stream, a FormData
// serialized first; `{ unencoded: true }` adds Unencoded-Digest, the same value without a coding
// (draft-ietf-httpbis-unencoded-digest §3).
import { randomBytes } from 'node:crypto'
import type { DigestAlgorithm, DigestedBody, DigestHeadersOptions, DigestibleBody } from '../../types/client'
import { ALGORITHMS } from '../core/algorithms'
import { MultiDigester } from '../core/digest-stream'
import { FST_DIGEST_INVALID_OPTION, FST_DIGEST_UNKNOWN_ALGORITHM } from '../core/errors'
import { describe } from '../core/option-checks'
import { digestFieldOf, serializeDigestField } from '../core/fields'

/** A FormData (the global one or undici's), by the brand undici checks (lib/core/util.js isFormDataLike). */
export function isFormData (body: unknown): body is FormData {
  return body !== null && typeof body === 'object' &&
    (body as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData' &&
    typeof (body as FormData).entries === 'function'
}

const escapeName = (name: string): string => name.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22')
const crlf = (text: string): string => text.replace(/\r\n|\r|\n/g, '\r\n')

// A FormData as sent (RFC 7578, as the HTML Standard encodes forms; undici serializes it as it writes, too late to
// hash: 7.30.2 lib/dispatcher/client-h1.js:1167-1177, 8.13.1 :1249-1254):
// a Blob that references files, its `type` the Content-Type; null for an entry neither string nor Blob.
export function formDataBlob (form: FormData): Blob | null {
  const boundary = `----fastify-digest-fields-${randomBytes(16).toString('hex')}`
  const parts: Array<string | Blob> = []
  for (const [name, value] of form.entries() as Iterable<[string, unknown]>) {
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(crlf(name))}"`
    if (typeof value === 'string') {
      parts.push(`${head}\r\n\r\n${crlf(value)}\r\n`)
    } else if (value instanceof Blob) {
      // FormData.append makes a Blob a File named "blob" (XHR §4.4.2, "create an entry").
      const filename = typeof (value as File).name === 'string' ? (value as File).name : 'blob'
      const type = value.type === '' ? 'application/octet-stream' : value.type
      parts.push(`${head}; filename="${escapeName(filename)}"\r\nContent-Type: ${type}\r\n\r\n`, value, '\r\n')
    } else {
      return null
    }
  }
  parts.push(`--${boundary}--\r\n`)
  return new Blob(parts, { type: `multipart/form-data; boundary=${boundary}` })
}

type Fields = { 'content-digest': string, 'unencoded-digest'?: string }

/** A body's bytes (or text, hashed as UTF-8) when known up front; else null. */
export function knownBytes (body: unknown): Uint8Array | string | null {
  if (typeof body === 'string') return body
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength)
  return body instanceof ArrayBuffer ? new Uint8Array(body) : null
}

/** A Blob body as it is, a FormData's serialization (formDataBlob()); null for any other body. */
export function blobOf (body: unknown): Blob | null {
  return body instanceof Blob ? body : isFormData(body) ? formDataBlob(body) : null
}

/** A Blob's Content-Digest, hashed as a stream; null when `stop` aborted the hashing. */
export async function blobDigest (
  blob: Blob, algorithms: readonly DigestAlgorithm[], stop?: { aborted?: unknown } | null
): Promise<string | null> {
  const hasher = new MultiDigester(algorithms)
  for await (const chunk of blob.stream()) {
    if (stop?.aborted === true) return null
    hasher.update(chunk)
  }
  return serializeDigestField(hasher.digest(), { strict: true })
}

/**
 * The algorithms, checked, and the fields for a value under `options`: Content-Digest, and Unencoded-Digest if asked.
 */
function checkArgs (
  caller: string, algorithm: DigestAlgorithm | readonly DigestAlgorithm[], options: DigestHeadersOptions | undefined
): [readonly DigestAlgorithm[], (field: string) => Fields] {
  const algorithms: readonly DigestAlgorithm[] = typeof algorithm === 'string' ? [algorithm] : algorithm
  if (algorithms.length === 0) throw new TypeError(`${caller} needs at least one algorithm`)
  for (const key of algorithms) if (!ALGORITHMS.has(key)) throw new FST_DIGEST_UNKNOWN_ALGORITHM(String(key))
  if (options === null || typeof (options ?? {}) !== 'object') {
    throw new FST_DIGEST_INVALID_OPTION('options', `expected { unencoded }, got ${describe(options)}`)
  }
  for (const key of Object.keys(options ?? {})) {
    if (key !== 'unencoded') throw new FST_DIGEST_INVALID_OPTION(key, 'unknown option (options: unencoded)')
  }
  const unencoded = options?.unencoded ?? false
  if (typeof unencoded !== 'boolean') {
    throw new FST_DIGEST_INVALID_OPTION('unencoded', `expected a boolean, got ${describe(unencoded)}`)
  }
  return [algorithms, (field) => unencoded
    ? { 'content-digest': field, 'unencoded-digest': field }
    : { 'content-digest': field }]
}

/**
 * `{ 'content-digest': … }` for a body whose bytes are known (deprecated algorithms allowed: servers may ask for
 * them).
 */
export function digestHeaders (
  body: DigestibleBody,
  algorithm: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256',
  options?: DigestHeadersOptions
): Fields {
  const bytes = knownBytes(body)
  if (bytes === null) {
    throw new TypeError('digestHeaders() takes a string, an ArrayBuffer or a typed array (Buffer, Uint8Array, …); ' +
      'use digestBody() for a Blob or FormData')
  }
  const [algorithms, fields] = checkArgs('digestHeaders()', algorithm, options)
  return fields(digestFieldOf(algorithms, bytes, true) as string)
}

/**
 * The body to send and its headers, for bytes, a Blob or a FormData (its Content-Type, with the boundary, in the
 * headers).
 */
export async function digestBody (
  body: DigestibleBody | Blob | FormData,
  algorithm: DigestAlgorithm | readonly DigestAlgorithm[] = 'sha-256',
  options?: DigestHeadersOptions
): Promise<DigestedBody> {
  const [algorithms, fields] = checkArgs('digestBody()', algorithm, options)
  const bytes = knownBytes(body)
  if (bytes !== null) {
    return { body: body as DigestibleBody, headers: fields(digestFieldOf(algorithms, bytes, true) as string) }
  }
  const blob = blobOf(body)
  if (blob === null) {
    throw new TypeError('digestBody() takes a string, an ArrayBuffer, a typed array, a Blob or a FormData')
  }
  const headers = fields(await blobDigest(blob, algorithms) as string) // without a signal: hashed whole
  return { body: blob, headers: blob === body ? headers : { ...headers, 'content-type': blob.type } }
}
