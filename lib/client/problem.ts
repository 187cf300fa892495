// A response that says the server refused the request's digest: RFC 9457
// problem details with a draft-ietf-httpapi-digest-fields-problem-types type
// (the plugin's, lib/core/problem.ts), or the plugin's own FST_DIGEST_*
// `code` (its about:blank problems: a missing digest, an undecodable coding).
import * as zlib from 'node:zlib'
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from 'node:zlib'
import type { DigestClientError } from '../../types/client'
import { rejected } from './failure'
import { codingsOf, hasZlibHeader, type Coding } from './side-decoder'

const DIGEST_TYPE = 'https://iana.org/assignments/http-problem-types#digest-'
/** Problem bodies are small; a larger one is not read as one. */
export const MAX_PROBLEM_SIZE = 64 * 1024

/** Whether a response may be a digest problem, from its status and Content-Type. */
export function mayBeProblem (statusCode: number, contentType: string | undefined): boolean {
  return statusCode >= 400 && contentType !== undefined && contentType.trim().toLowerCase().startsWith('application/problem+json')
}

const DECODE: Readonly<Record<Coding, (data: Buffer, options: { maxOutputLength: number }) => Buffer>> = {
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  // zlib or raw deflate data, as side-decoder.ts reads them.
  deflate: (data, options) => hasZlibHeader(data) ? inflateSync(data, options) : inflateRawSync(data, options),
  br: brotliDecompressSync,
  // Absent without node:zlib's zstd (Node.js 20), where codingsOf() never gives zstd.
  zstd: (zlib as unknown as Record<string, (data: Buffer, options: { maxOutputLength: number }) => Buffer>).zstdDecompressSync as never
}

/**
 * The problem's JSON text, decoded when it came coded (fetch asks for gzip,
 * deflate and br): the last coding applied is undone first (RFC 9110 §8.4),
 * each step capped. Codings not decoded here give no text.
 */
function problemText (body: Buffer, contentEncoding: string | undefined): string {
  const codings = codingsOf(contentEncoding)
  if (codings === null) return ''
  return codings.reduceRight((data, coding) => DECODE[coding](data, { maxOutputLength: MAX_PROBLEM_SIZE }), body).toString('utf8')
}

interface Member { header?: unknown, algorithm?: unknown }

function firstMember (problem: Record<string, unknown>): Member | undefined {
  for (const key of ['mismatched_digests', 'invalid_digests', 'unsupported_algorithms']) {
    const list = problem[key]
    if (Array.isArray(list) && list.length > 0 && list[0] !== null && typeof list[0] === 'object') return list[0] as Member
  }
  return undefined
}

/**
 * The error for a digest problem body, or null when the body is not one.
 * `requestField` names the field when the problem's members do not (the
 * request's own digest field, else Content-Digest).
 */
export function problemError (body: Buffer, contentEncoding: string | undefined, requestField: string): DigestClientError | null {
  let problem: unknown
  try {
    problem = JSON.parse(problemText(body, contentEncoding))
  } catch {
    return null
  }
  if (problem === null || typeof problem !== 'object') return null
  const { type, code, detail, title } = problem as Record<string, unknown>
  const isDigest = (typeof type === 'string' && type.startsWith(DIGEST_TYPE)) ||
    (typeof code === 'string' && code.startsWith('FST_DIGEST_'))
  if (!isDigest) return null
  const member = firstMember(problem as Record<string, unknown>)
  const field = typeof member?.header === 'string' ? member.header : requestField
  const algorithm = typeof member?.algorithm === 'string' ? member.algorithm : null
  const text = typeof detail === 'string' ? detail : typeof title === 'string' ? title : String(type ?? code)
  return rejected(field, algorithm, text)
}
