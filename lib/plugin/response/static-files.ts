// Files served by @fastify/static (docs/design.md, "Static files"): the file `staticHeaders` recorded, its
// whole-file digests taken before sending, and what a GET streams checked against them.
import { ReadStream, fstatSync, type Stats } from 'node:fs'
import { stat as statPath } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import { pipeline } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import {
  CheckedStream, collectUpTo, type Collected, type DigestResults, type DigestTransform
} from '../../core/digest-stream'
import { FST_DIGEST_FILE_CHANGED, FST_DIGEST_SIDECAR_WRONG } from '../../core/errors'
import {
  sameFile, sidecarPath, type ByteRange, type FileDigestCache, type FileResponse, type StaticFile
} from '../../core/file-cache'
import { NONE, union, type FieldPlan } from '../../core/response-plan'
import { NOT_THE_406S, writeFields } from './emit'
import { blankProblem, PROBLEM_CONTENT_TYPE } from '../../core/problem'
import { digestFieldOf } from '../../core/fields'

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

/**
 * A file as one response sends it: its whole-file digests, taken before sending (file-cache.ts), and a GET's stream
 * checked against the digests it goes out with.
 */
export class FileSending {
  /** Digests of the whole file as sent, coding included (strict HEAD and 206; what a GET's stream must match). */
  coded: DigestResults | null = null
  /** The identity representation's digests: the file's, or a pre-compressed file's original's. */
  identity: DigestResults | null = null
  /** `identity` is a pre-compressed file's original's: an uncoded representation. */
  original = false
  /** A GET's stream as passed on, checked at its end. */
  stream: CheckedStream | null = null
  /** The content is being read into memory before anything is sent (fields in the header section). */
  #collecting = false
  /** The check failed while the content was read into memory: answered with a 500 instead (failed()). */
  #failure: Error | null = null

  /** A 206's Content-Digest is read from the file first: neither a trailer nor a buffer can carry it. */
  readonly readsPart: boolean

  /** `fields`, `maxBufferSize`: the response's plan and limit. */
  constructor (
    readonly file: FileResponse, readonly files: FileDigestCache, readonly fields: FieldPlan,
    readonly maxBufferSize: number
  ) {
    const range = file.range
    const large = range !== null && range.end - range.start >= maxBufferSize
    this.readsPart = large && fields.content.length > 0 && !fields.trailers
  }

  /** Its representation digests (cached): of the identity file, strict of the file as sent; whether one is unknown. */
  async hash (encoding: unknown): Promise<boolean> {
    const { file, files } = this
    if (file.stale) return false
    const { fileIdentity, coded } = this.fields
    const identity = fileIdentity.length === 0 ? file : await identityFile(file, encoding)
    this.original = identity !== file && identity !== null
    this.coded = await files.digests(file, identity === file ? union(fileIdentity, coded) : coded)
    if (identity === file) this.identity = this.coded
    else if (identity !== null) this.identity = await files.digests(identity, fileIdentity)
    return this.coded === null || (identity !== null && this.identity === null)
  }

  /**
   * A GET's file stream, checked at its end against the digests it is sent with (`hashed`: the content's); a mismatch
   * cuts the response off.
   */
  checked (reply: FastifyReply, stream: NodeJS.ReadableStream, hashed: readonly DigestAlgorithm[]): CheckedStream {
    const { file, files } = this
    const range = file.range
    let algorithms = NONE
    if (range === null && !file.stale) algorithms = union(hashed, [...(this.coded?.keys() ?? NONE)])
    else if (!file.stale && this.readsPart) algorithms = this.fields.content
    const check = new CheckedStream(algorithms, (algorithm) => {
      // The whole file's digests a GET went out with, not matching the bytes read: a sidecar's, or the file changed.
      const err = range === null && files.refute(file)
        ? new FST_DIGEST_SIDECAR_WRONG(sidecarPath(file.path, algorithm), file.path, algorithm)
        : new FST_DIGEST_FILE_CHANGED(file.path, algorithm)
      if (range !== null) files.drop(file.path)
      // Read into memory, nothing sent: released without an error, the content stage answers (failed()).
      if (this.#collecting) {
        this.#failure = err
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
    this.stream = check
    if (range === null && this.coded !== null) {
      this.expect(this.coded)
      check.once('close', files.sending(file))
    }
    // The file feeds the check: a read error fails the check; the check's failure (or a client gone) releases the file
    // without an error, which @fastify/static would answer a second time (it handles its stream's errors itself).
    pipeline(stream, check, () => {})
    return check
  }

  /** `digests` of the content, which the GET's stream must match at its end. */
  expect (digests: DigestResults): void {
    for (const [a, v] of digests) (this.stream as CheckedStream).expected.set(a, v)
  }

  /** collectUpTo() of the content read from the file; null when its check failed meanwhile (then failed()). */
  async collect (hasher: DigestTransform): Promise<Collected | null> {
    this.#collecting = true
    const collected = await collectUpTo(hasher, this.maxBufferSize).catch((err: unknown) => {
      if (this.#failure === null) throw err
      return null
    }).finally(() => { this.#collecting = false })
    return this.#failure === null ? collected : null
  }

  // The answer when the check failed while the content was read into memory: nothing was sent, so a 500 problem with
  // digests of its own body (RFC 9530 B.10), the failure logged once here. Its detail names no path: the log does.
  failed (request: FastifyRequest, reply: FastifyReply): Buffer {
    const err = this.#failure as Error & { code: string }
    request.log.error({ err }, err.message)
    reply.code(500)
    for (const name of NOT_THE_406S) reply.removeHeader(name)
    const detail = 'The file did not match the digests it was to be sent with'
    const body = Buffer.from(JSON.stringify(blankProblem(500, err.code, detail)))
    reply.header('content-type', PROBLEM_CONTENT_TYPE).header('content-length', body.byteLength)
    const { content, repr, strict } = this.fields
    writeFields(reply, digestFieldOf(content, body, strict), digestFieldOf(repr, body, strict), null)
    return body
  }

  /** The whole file's digests as sent, for `algorithms`: known at the representation stage, or cached. */
  async wholeContent (algorithms: readonly DigestAlgorithm[]): Promise<DigestResults | null> {
    const known = this.coded
    if (known !== null && algorithms.every((a) => known.has(a))) return known
    return await this.files.digests(this.file, algorithms)
  }
}
