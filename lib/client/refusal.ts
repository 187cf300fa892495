// A response saying the server refused the request's digest fields: a 406 to
// a request that sent some, or RFC 9457 problem details with a
// draft-ietf-httpapi-digest-fields-problem-types type (lib/core/problem.ts),
// or the plugin's own FST_DIGEST_* `code` (its about:blank problems).
import * as zlib from 'node:zlib'
import type { DigestClientError } from '../../types/client'
import { clientError } from './failures'
import { codingsOf, hasZlibHeader } from './side-decoder'
import type { RequestFacts } from './response-check'

const DIGEST_TYPE = 'https://iana.org/assignments/http-problem-types#digest-'
/** Problem bodies are small; a larger one is not read as one. */
export const MAX_PROBLEM_SIZE = 64 * 1024

/** Whether a response may be a digest problem, from its status and Content-Type. */
export function mayBeProblem (statusCode: number, contentType: string | undefined): boolean {
  return statusCode >= 400 && contentType?.trim().toLowerCase().startsWith('application/problem+json') === true
}

type Decode = (data: Buffer, options: zlib.ZlibOptions) => Buffer
const DECODE: Readonly<Record<string, Decode>> = {
  gzip: zlib.gunzipSync,
  'x-gzip': zlib.gunzipSync,
  deflate: (data, options) => (hasZlibHeader(data) ? zlib.inflateSync : zlib.inflateRawSync)(data, options),
  br: zlib.brotliDecompressSync,
  // Only where node:zlib has zstd: codingsOf() never gives it elsewhere.
  zstd: (zlib as unknown as Record<string, Decode>).zstdDecompressSync as Decode
}

/** The 406 or digest problem refusing the request's digest fields, or null. */
export function refusalOf (status: number, request: RequestFacts, body: Buffer | null, contentEncoding: string | undefined): DigestClientError | null {
  const { digestField, digestAlgorithm } = request
  if (status === 406 && digestField !== null) return clientError('FST_DIGEST_NOT_ACCEPTABLE', digestField, digestAlgorithm)
  if (body === null) return null
  // Decoded when coded (fetch asks for gzip, deflate and br), the last coding applied first (RFC 9110 §8.4), each step capped.
  const codings = codingsOf(contentEncoding)
  if (codings === null) return null
  let problem: Record<string, unknown>
  try {
    problem = JSON.parse(codings.reduceRight((data, c) => (DECODE[c] as Decode)(data, { maxOutputLength: MAX_PROBLEM_SIZE }), body).toString())
  } catch {
    return null
  }
  if (problem === null || typeof problem !== 'object') return null
  const { type, code, detail, title } = problem
  if (!(typeof type === 'string' && type.startsWith(DIGEST_TYPE)) && !(typeof code === 'string' && code.startsWith('FST_DIGEST_'))) return null
  const member = (['mismatched_digests', 'invalid_digests', 'unsupported_algorithms'].map((key) => problem[key])
    .map((list) => Array.isArray(list) ? list[0] as unknown : null).find((first) => first !== null && typeof first === 'object') ?? {}) as Record<string, unknown>
  const field = typeof member.header === 'string' ? member.header : digestField === null || digestField.startsWith('Want-') ? 'Content-Digest' : digestField
  const text = typeof detail === 'string' ? detail : typeof title === 'string' ? title : String(type ?? code)
  return clientError('FST_DIGEST_REQUEST_REJECTED', field, typeof member.algorithm === 'string' ? member.algorithm : null, text)
}
