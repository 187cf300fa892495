// Files served by @fastify/static (docs/design.md, "Static files"). A
// response stands for a file only when `staticHeaders`, passed as
// @fastify/static's documented `setHeaders(res, path, stat)` option, recorded
// it: @fastify/send gives a HEAD only an empty stream and a 206 only a part,
// so nothing else says which file they stand for. What a GET streams is
// checked against that record with public facts only: fs.ReadStream's `path`,
// its 'open' event's descriptor, and the Content-Length or Content-Range that
// @fastify/send set on the reply.
import { ReadStream, fstatSync, type Stats } from 'node:fs'
import { stat as statPath } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { sameFile, type ByteRange, type StaticFile } from '../../core/file-cache'

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
  const m = typeof value === 'string' ? /^bytes (\d+)-(\d+)\/(\d+)$/.exec(value) : null
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
