// Files served by @fastify/static (docs/design.md, "Static files"): the file `staticHeaders` recorded, its
// whole-file digests taken before sending, and what a GET streams checked against them.
import { ReadStream, fstatSync, type Stats } from 'node:fs'
import { stat as statPath } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import { pipeline, type Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import type { DigestParams } from '../../core/option-checks'
import { CheckedStream, type DigestResults } from '../../core/digest-stream'
import { FST_DIGEST_FILE_CHANGED, FST_DIGEST_SIDECAR_WRONG } from '../../core/errors'
import {
  hashFile, sameFile, sidecarPath, type ByteRange, type FileResponse, type StaticFile
} from '../../core/file-cache'
import { NONE, union, type ResponsePlan } from '../../core/response-plan'
import { NOT_THE_406S, decidePrecondition, emitFields, reprOf, writeFields } from './emit'
import { blankProblem, PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { digestFieldOf } from '../../core/fields'
import type { Payload, ResponseState } from './response-state'

/** Reply decorator (and raw response property): the file and stat recorded by staticHeaders. */
export const kStaticFile = Symbol('fastify-digest-fields.staticFile')

/** The extensions @fastify/static's `preCompressed` looks for, by Content-Encoding. */
const CODED_SUFFIXES: ReadonlyMap<string, string> = new Map([['br', '.br'], ['gzip', '.gz'], ['deflate', '.deflate']])

interface WithStaticFile { [kStaticFile]: StaticFile | null }

/** @fastify/static's `setHeaders`: records the file and its stat (10 passes the reply, 8 and 9 the raw response). */
export function staticHeaders (
  reply: FastifyReply | ServerResponse | Http2ServerResponse, path: string, stat: Stats
): void {
  (reply as unknown as WithStaticFile)[kStaticFile] = { path, stat }
}

/** The recorded file, for a GET when @fastify/send's stream reads its path, whole (200) or its Content-Range (206). */
export async function resolveFileResponse (
  request: FastifyRequest, reply: FastifyReply, payload: unknown
): Promise<FileResponse | null> {
  const record = (reply as unknown as WithStaticFile)[kStaticFile] ??
    (reply.raw as unknown as Partial<WithStaticFile>)[kStaticFile] ?? null
  if (record === null) return null
  if (request.method === 'HEAD') return { ...record, stream: null, range: null, stale: false }
  if (!(payload instanceof ReadStream) || payload.path !== record.path) return null
  let range: ByteRange | null = null
  if (reply.statusCode === 206) {
    // `bytes first-last/complete` (RFC 9110 §14.4)
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(reply.getHeader('content-range')))
    if (m === null || Number(m[3]) !== record.stat.size) return null
    range = { start: Number(m[1]), end: Number(m[2]) }
  } else if (Number(reply.getHeader('content-length')) !== record.stat.size) {
    return null
  }
  // @fastify/send opens the path after its stat: the stat of the descriptor it opens ('open' event) must
  // be the recorded one. Already open (which version it reads is unknown), or failing: stale.
  const opened = await new Promise<Stats | null>((resolve) => {
    if (!payload.pending || payload.destroyed) return resolve(null)
    const done = (fd?: number): void => {
      payload.off('open', done).off('close', done)
      resolve(fd === undefined ? null : fstatSync(fd))
    }
    payload.once('open', done).once('close', done)
  })
  return { ...record, stream: payload, range, stale: opened === null || !sameFile(opened, record.stat) }
}

/**
 * The uncoded representation's file: a pre-compressed file's original (`a.js` of `a.js.br`; null when gone), else
 * itself.
 */
export async function identityFile (file: StaticFile, encoding: unknown): Promise<StaticFile | null> {
  const suffix = typeof encoding === 'string' ? CODED_SUFFIXES.get(encoding) : undefined
  if (suffix === undefined || !file.path.endsWith(suffix)) return file
  const path = file.path.slice(0, -suffix.length)
  const stat = await statPath(path).catch(() => null)
  return stat === null ? null : { path, stat }
}

/** A file's representation digests (cache): of its identity file and, strict, of the file as sent. */
export async function fileDigests (state: ResponseState, file: FileResponse): Promise<void> {
  if (file.stale) return
  const { fileIdentity, coded } = state.plan.mode
  const identity = fileIdentity.length === 0 ? file : await identityFile(file, state.reprEncoding)
  if (identity !== file && identity !== null) state.identityUncoded = true
  state.fileCoded = await state.context.files.digests(file, identity === file ? union(fileIdentity, coded) : coded)
  if (identity === file) state.repr = state.fileCoded
  else if (identity !== null) state.repr = await state.context.files.digests(identity, fileIdentity)
  // Being hashed in the background: left out for now.
  const unknown = state.fileCoded === null || (identity !== null && state.repr === null)
  if (state.params.fileHashing === 'background' && unknown) state.omitted = 'file-not-hashed'
}

/**
 * A GET's file stream, checked at its end against the digests taken before sending; a mismatch cuts the response off.
 */
export function checkedFileStream (
  reply: FastifyReply, state: ResponseState, file: FileResponse, stream: NodeJS.ReadableStream
): CheckedStream {
  const { plan, params } = state
  const { range } = file
  let algorithms = NONE
  if (range === null && !file.stale) algorithms = union(plan.contentHashed, [...(state.fileCoded?.keys() ?? NONE)])
  else if (range !== null && !file.stale && partReadFromFile(plan, params, range)) algorithms = plan.content
  const { files } = state.context
  const check = new CheckedStream(algorithms, (algorithm) => {
    // The whole file's digests a GET went out with, not matching the bytes read: a sidecar's, or the file changed.
    const err = range === null && files.refute(file)
      ? new FST_DIGEST_SIDECAR_WRONG(sidecarPath(file.path, algorithm), file.path, algorithm)
      : new FST_DIGEST_FILE_CHANGED(file.path, algorithm)
    if (range !== null) files.drop(file.path)
    // Read into memory, nothing sent: released without an error, the content stage answers (fileFailed).
    if (state.collecting) {
      state.fileFailure = err
      return null
    }
    // Sending: logged once here; the status line and headers go out first (a coder such as @fastify/compress may
    // still hold every byte), so the client sees a response cut off, never none. The check is released without an
    // error, which its readers (fastify, compress) would log again; the response is destroyed with it, which HTTP/2
    // turns into a reset with INTERNAL_ERROR (NO_ERROR would end it cleanly).
    reply.log.error({ err }, err.message)
    if (!reply.raw.headersSent) reply.raw.flushHeaders()
    reply.raw.destroy(err)
    return null
  })
  if (range === null && state.fileCoded !== null) {
    for (const [a, v] of state.fileCoded) check.expected.set(a, v)
    check.once('close', files.sending(file))
  }
  // The file feeds the check: a read error fails the check; the check's failure (or a client gone) releases the file
  // without an error, which @fastify/static would answer a second time (it handles its stream's errors itself).
  pipeline(stream, check, () => {})
  state.fileStream = check
  return check
}

// A file whose check failed while its content was read into memory (state.collecting): nothing was sent, so the
// answer is a 500 problem with digests of its own body (RFC 9530 B.10), the failure logged once here. Its detail
// names no path: the log does.
export function fileFailed (request: FastifyRequest, reply: FastifyReply, state: ResponseState): Buffer {
  const err = state.fileFailure as Error & { code: string }
  request.log.error({ err }, err.message)
  reply.code(500)
  for (const name of NOT_THE_406S) reply.removeHeader(name)
  const detail = 'The file did not match the digests it was to be sent with'
  const body = Buffer.from(JSON.stringify(blankProblem(500, err.code, detail)))
  reply.header('content-type', PROBLEM_CONTENT_TYPE).header('content-length', body.byteLength)
  const { content, repr, mode } = state.plan
  writeFields(reply, digestFieldOf(content, body, mode.strict), digestFieldOf(repr, body, mode.strict), null)
  return body
}

/** Whether a 206's Content-Digest is read from the file first: neither a trailer nor a buffer can carry it. */
function partReadFromFile (plan: ResponsePlan, params: DigestParams, range: ByteRange): boolean {
  return plan.content.length > 0 && !plan.trailers && range.end - range.start >= params.maxBufferSize
}

/** The whole file's digests as sent, for the content algorithms: known at the representation stage, or cached. */
async function wholeFileContent (state: ResponseState, file: FileResponse): Promise<DigestResults | null> {
  const known = state.fileCoded
  const algorithms = state.plan.contentHashed
  if (known !== null && algorithms.every((a) => known.has(a))) return known
  return await state.context.files.digests(file, algorithms)
}

/** A 206's Content-Digest read from the file's range first; null (logged) when the file changed meanwhile. */
async function partContent (
  request: FastifyRequest, file: FileResponse, algorithms: readonly DigestAlgorithm[]
): Promise<DigestResults | null> {
  const content = await hashFile(file, algorithms, file.range)
  const changed = 'fastify-digest-fields: file changed while hashing the range, Content-Digest omitted'
  if (content === null) request.log.debug({ path: file.path }, changed)
  return content
}

/**
 * Content stage of a GET for a file, or null to hash its stream as any (coded by compress, a part in a trailer or
 * buffer).
 */
export async function fileContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState
): Promise<Payload | null> {
  const { plan, params } = state
  const file = state.file as FileResponse
  const stream = state.fileStream as CheckedStream
  // The 406 rule decided before anything is sent: the content digest can still go as a trailer.
  const refused = plan.reprFrom === 'content'
    ? null
    : decidePrecondition(reply, state, reprOf(reply, state, null, state.repr))
  if (refused !== null) {
    stream.destroy()
    ;(payload as Readable).destroy()
    return refused
  }
  if (payload !== stream || (file.range === null && file.stale)) return null
  let content: DigestResults | null = null
  if (file.range === null) {
    content = await wholeFileContent(state, file)
    if (content === null) return null
  } else if (plan.content.length > 0) {
    if (!partReadFromFile(plan, params, file.range)) return null
    content = await partContent(request, file, plan.content)
  }
  // What the stream must match at its end: the digests it is sent with; the file released when the answer is a 406
  // instead.
  if (content !== null) for (const [a, v] of content) stream.expected.set(a, v)
  const out = emitFields(reply, stream, state, content, state.repr)
  if (out !== stream) stream.destroy()
  return out
}
