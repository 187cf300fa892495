// Files served by @fastify/static (docs/design.md, "Static files"). A
// response stands for a file only when `staticHeaders`, passed as
// @fastify/static's documented `setHeaders(res, path, stat)`, recorded it (a
// HEAD's stream is empty, a 206's a part), checked with public facts only:
// fs.ReadStream's `path`, its 'open' descriptor, and the Content-Length or
// Content-Range @fastify/send set. The whole-file digests (file-cache.ts) are
// taken before sending; what a GET streams is checked against them.
import { ReadStream, fstatSync, type Stats } from 'node:fs'
import { stat as statPath } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import { pipeline, type Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestParams } from '../../core/digest-params'
import { CheckedStream, type DigestResults } from '../../core/digest-stream'
import { FST_DIGEST_FILE_CHANGED } from '../../core/errors'
import { hashFile, sameFile, type ByteRange, type StaticFile } from '../../core/file-cache'
import { NONE, union, type ResponsePlan } from '../../core/response-plan'
import { decidePrecondition, emitFields, reprDigests, wholeOf } from './emit'
import type { Payload, ResponseState } from './reply-state'

/** Reply decorator (and raw response property): the file and stat recorded by staticHeaders. */
export const kStaticFile = Symbol('fastify-digest-fields.staticFile')

/** A response of @fastify/static recognized as a file. */
export interface FileResponse extends StaticFile {
  /** @fastify/send's stream of the file (GET); null for a HEAD. */
  readonly stream: ReadStream | null
  /** The part a GET 206 sends; null for a 200 or a HEAD. */
  readonly range: ByteRange | null
  /** The stream reads another version of the file than `stat` describes (or none): no whole-file digest stands for it. */
  readonly stale: boolean
}

/** The extensions @fastify/static's `preCompressed` looks for, by Content-Encoding. */
const CODED_SUFFIXES: ReadonlyMap<string, string> = new Map([['br', '.br'], ['gzip', '.gz'], ['deflate', '.deflate']])

interface WithStaticFile { [kStaticFile]: StaticFile | null }

/**
 * @fastify/static's `setHeaders`: records the file a response stands for,
 * and its stat. @fastify/static 10 passes the reply; 8 and 9 pass the raw
 * response, which gets the record as a property of its own.
 */
export function staticHeaders (reply: FastifyReply | ServerResponse | Http2ServerResponse, path: string, stat: Stats): void {
  (reply as unknown as WithStaticFile)[kStaticFile] = { path, stat }
}

/** `bytes first-last/complete` (RFC 9110 §14.4), or null. */
function contentRange (value: unknown): (ByteRange & { total: number }) | null {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(value))
  return m === null ? null : { start: Number(m[1]), end: Number(m[2]), total: Number(m[3]) }
}

/**
 * The stat of the file a pending ReadStream opens, taken on its 'open'
 * event's descriptor (node fs docs); null when it fails to open, or is
 * already open (which version it reads is then unknown).
 */
function openedStat (stream: ReadStream): Promise<Stats | null> {
  if (!stream.pending || stream.destroyed) return Promise.resolve(null)
  return new Promise((resolve) => {
    const opened = (fd: number): void => {
      stream.off('close', closed)
      resolve(fstatSync(fd))
    }
    const closed = (): void => {
      stream.off('open', opened)
      resolve(null)
    }
    stream.once('open', opened)
    stream.once('close', closed)
  })
}

/**
 * The file a response of @fastify/static stands for: one recorded by
 * staticHeaders, and for a GET the stream @fastify/send opened on that path
 * covering the whole file (200) or the Content-Range (206). Null otherwise.
 */
export async function resolveFileResponse (request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<FileResponse | null> {
  const record = (reply as unknown as WithStaticFile)[kStaticFile] ?? (reply.raw as unknown as Partial<WithStaticFile>)[kStaticFile] ?? null
  if (record === null) return null
  if (request.method === 'HEAD') return { ...record, stream: null, range: null, stale: false }
  if (!(payload instanceof ReadStream) || payload.path !== record.path) return null
  let range: ByteRange | null = null
  if (reply.statusCode === 206) {
    const cr = contentRange(reply.getHeader('content-range'))
    if (cr === null || cr.total !== record.stat.size) return null
    range = { start: cr.start, end: cr.end }
  } else if (Number(reply.getHeader('content-length')) !== record.stat.size) {
    return null
  }
  // @fastify/send opens the path after its stat: a stream reading another
  // version (the file replaced in between, as by a deploy) must not get the
  // digests of the version the record describes.
  const opened = await openedStat(payload)
  return { ...record, stream: payload, range, stale: opened === null || !sameFile(opened, record.stat) }
}

/**
 * The file holding the representation before content coding: for a
 * pre-compressed file (`foo.js.br` sent with `Content-Encoding: br`), the
 * original next to it, or null when it is gone. Any other file is its own.
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
  // Another version than @fastify/send described: hashed as it flows.
  if (file.stale) return
  const { files } = state.context
  const { fileIdentity, coded } = state.plan.mode
  const identity = fileIdentity.length === 0 ? file : await identityFile(file, state.reprEncoding)
  // A pre-compressed file's original is the uncoded representation.
  if (identity !== file && identity !== null) state.identityUncoded = true
  if (identity === file) {
    state.repr = await files.digests(file, union(fileIdentity, coded))
    state.fileCoded = state.repr
  } else {
    state.fileCoded = await files.digests(file, coded)
    state.repr = identity === null ? null : await files.digests(identity, fileIdentity)
  }
  // Being hashed in the background: left out for now.
  if (state.params.fileHashing === 'background' && (state.fileCoded === null || (identity !== null && state.repr === null))) {
    state.omitted = 'file-not-hashed'
  }
}

/**
 * A GET's file stream, checked at its end against the digests taken before
 * sending (a 200's whole file, a 206's part read from the file). On a
 * mismatch the digests are dropped and the response cut off, never ended cleanly.
 */
export function checkedFileStream (reply: FastifyReply, state: ResponseState, file: FileResponse, stream: NodeJS.ReadableStream): CheckedStream {
  const { plan, params } = state
  const { range } = file
  // A stale file's stream is hashed as any stream: nothing is taken before sending.
  let algorithms = NONE
  if (range === null && !file.stale) algorithms = union(plan.contentHashed, [...(state.fileCoded?.keys() ?? NONE)])
  else if (range !== null && !file.stale && partReadFromFile(plan, params, range)) algorithms = plan.content
  const check = new CheckedStream(algorithms, (algorithm) => {
    const err = new FST_DIGEST_FILE_CHANGED(file.path, algorithm)
    state.context.files.drop(file.path)
    // With an error: an HTTP/2 stream is then reset with INTERNAL_ERROR (a
    // reset with NO_ERROR would end it cleanly for the client).
    reply.raw.destroy(err)
    return err
  })
  // The content stage adds a 200's Content-Digest and a 206's part digest.
  if (range === null && state.fileCoded !== null) for (const [a, v] of state.fileCoded) check.expected.set(a, v)
  pipeline(stream, check, () => {})
  state.fileStream = check
  return check
}

/**
 * Whether a 206's Content-Digest is read from the file before sending: it
 * can go neither as a trailer nor buffered within maxBufferSize.
 */
function partReadFromFile (plan: ResponsePlan, params: DigestParams, range: ByteRange): boolean {
  return plan.content.length > 0 && !plan.trailers && range.end - range.start >= params.maxBufferSize
}

/** What the stream must match at its end: the digests the response is sent with. */
function expect (stream: CheckedStream, digests: DigestResults): void {
  for (const [a, v] of digests) stream.expected.set(a, v)
}

/** emitFields() for a file's stream, releasing the file when the answer is a 406 instead. */
function emitFileFields (
  reply: FastifyReply, stream: CheckedStream, state: ResponseState, content: DigestResults | null
): Payload {
  const out = emitFields(reply, stream, state, content, state.repr)
  if (out !== stream) stream.destroy()
  return out
}

/**
 * Content stage of a GET for a file, or null to hash its stream as any
 * (coded by compress, or a 206's part with trailers or within maxBufferSize):
 * the whole file's digests from the cache, a part's read from the file.
 */
export async function fileContent (
  request: FastifyRequest, reply: FastifyReply, payload: NodeJS.ReadableStream, state: ResponseState, file: FileResponse
): Promise<Payload | null> {
  const { plan, params } = state
  const stream = state.fileStream as CheckedStream
  const range = file.range
  if (plan.reprFrom !== 'content') {
    // The representation digest is known now: decide the 406 rule before
    // anything is sent, so the content digest can still go as a trailer.
    const refused = decidePrecondition(reply, state, reprDigests(reply, wholeOf(reply, state, null, state.repr), plan.reprNeeded))
    if (refused !== null) {
      stream.destroy()
      ;(payload as Readable).destroy()
      return refused
    }
  }
  if (payload !== stream) return null
  if (range === null) {
    if (file.stale) return null
    // Often already at hand from the representation stage (even with fileCacheSize 0).
    const needed = plan.contentHashed
    const known = state.fileCoded
    const content = known !== null && needed.every((a) => known.has(a)) ? known : await state.context.files.digests(file, needed)
    if (content === null) return null
    expect(stream, content)
    return emitFileFields(reply, stream, state, content)
  }
  if (plan.content.length === 0) return emitFileFields(reply, stream, state, null)
  if (!partReadFromFile(plan, params, range)) return null
  // Neither trailers nor a buffer: read the part from the file first.
  const content = await hashFile(file, plan.content, range)
  if (content === null) request.log.debug({ path: file.path }, 'fastify-digest-fields: file changed while hashing the range, Content-Digest omitted')
  else expect(stream, content)
  return emitFileFields(reply, stream, state, content)
}
