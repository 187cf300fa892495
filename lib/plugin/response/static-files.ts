// Files served by @fastify/static (docs/design.md, "Static files"): which
// response stands for which file, and the file holding its representation.
//
// @fastify/send hands a HEAD only an empty stream, so the response does not
// say which file it stands for. `staticHeaders`, passed as @fastify/static's
// `setHeaders` option, records the file and its stat on the reply. Without
// it, a HEAD finds its file through an earlier GET of the same URL that had
// the same ETag, and only uses a digest that is already cached. The digests
// themselves come from the cache of lib/core/file-cache.ts.
import { ReadStream, fstatSync, type Stats } from 'node:fs'
import { stat as statPath } from 'node:fs/promises'
import type { ServerResponse } from 'node:http'
import type { Http2ServerResponse } from 'node:http2'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { sameFile, sendEtag, parseContentRange, type ByteRange, type FileDigestCache, type FileStat, type StaticFile } from '../../core/file-cache'

/** Reply decorator (and raw response property): the file and stat recorded by staticHeaders. */
export const kStaticFile = Symbol('fastify-digest-fields.staticFile')

/** A response of @fastify/static recognized as a file. */
export interface FileResponse extends StaticFile {
  /** @fastify/send's stream of the file (GET); null for a HEAD. */
  readonly stream: ReadStream | null
  /** The part a GET 206 sends; null for a 200 or a HEAD. */
  readonly range: ByteRange | null
  /** Found through the ETag alone (a HEAD without staticHeaders): use cached digests only. */
  readonly cachedOnly: boolean
  /** The stream reads another version of the file than `stat` describes (or none): no whole-file digest stands for it. */
  readonly stale: boolean
}

/** The extensions @fastify/static's `preCompressed` looks for, by Content-Encoding. */
const CODED_SUFFIXES: ReadonlyMap<string, string> = new Map([['br', '.br'], ['gzip', '.gz'], ['deflate', '.deflate']])

interface WithStaticFile { [kStaticFile]: StaticFile | null }

type RawResponse = ServerResponse | Http2ServerResponse

/**
 * @fastify/static's `setHeaders` option: `setHeaders: staticHeaders`, or,
 * with headers of your own, call it from your function with the same three
 * arguments. It records the file a response stands for, and its stat, so
 * HEAD and 206 responses can carry the whole file's Repr-Digest.
 * @fastify/static 10 passes the reply; 8 and 9 pass the raw response
 * (`reply.raw`), which gets the record as a property of its own.
 */
export function staticHeaders (reply: FastifyReply | RawResponse, path: string, stat: Stats): void {
  (reply as unknown as WithStaticFile)[kStaticFile] = { path, stat }
}

function recorded (reply: FastifyReply): StaticFile | null {
  return (reply as unknown as WithStaticFile)[kStaticFile] ?? (reply.raw as unknown as Partial<WithStaticFile>)[kStaticFile] ?? null
}

async function statOf (path: string): Promise<Stats | null> {
  try {
    return await statPath(path)
  } catch {
    return null
  }
}

/**
 * The stat of the file a ReadStream reads, once it is open; null when it
 * fails to open or was closed first. Taken synchronously on the event, while
 * the descriptor is certainly open.
 */
function openedStat (stream: ReadStream): Promise<Stats | null> {
  return new Promise((resolve) => {
    const settle = (): void => {
      stream.off('ready', settle)
      stream.off('close', settle)
      const fd = (stream as unknown as { fd: number | null }).fd
      resolve(fd === null ? null : fstatSync(fd))
    }
    if (stream.pending && !stream.destroyed) {
      stream.on('ready', settle)
      stream.on('close', settle)
    } else {
      settle()
    }
  })
}

/** Where an earlier response of this URL, ETag and coding found its file. */
function aliasOf (request: FastifyRequest, etag: string, encoding: unknown): string {
  const pathname = request.url.split('?', 1)[0] as string
  return `${request.host}\u0000${pathname}\u0000${etag}\u0000${String(encoding)}`
}

/**
 * Recognize a response of @fastify/static: a GET whose payload is the
 * fs.ReadStream @fastify/send opened (with the stat staticHeaders recorded,
 * or a fresh stat matching the ETag), or a HEAD with a recorded file or
 * found through the ETag. The stream must cover exactly the whole file (200)
 * or the Content-Range (206). Returns null for anything else.
 */
export async function resolveFileResponse (
  request: FastifyRequest, reply: FastifyReply, payload: unknown, cache: FileDigestCache
): Promise<FileResponse | null> {
  const record = recorded(reply)
  const etag = reply.getHeader('etag')
  const encoding = reply.getHeader('content-encoding')
  let file: FileResponse
  if (request.method === 'HEAD') {
    if (record !== null) {
      file = { ...record, stream: null, range: null, cachedOnly: false, stale: false }
    } else {
      if (typeof etag !== 'string') return null
      const path = cache.recall(aliasOf(request, etag, encoding))
      const stat = path === null ? null : await statOf(path)
      if (stat === null || sendEtag(stat) !== etag) return null
      file = { path: path as string, stat, stream: null, range: null, cachedOnly: true, stale: false }
    }
  } else {
    if (!(payload instanceof ReadStream) || typeof payload.path !== 'string') return null
    const path = payload.path
    let stat: FileStat
    if (record !== null) {
      if (record.path !== path) return null
      stat = record.stat
    } else {
      const fresh = typeof etag === 'string' ? await statOf(path) : null
      if (fresh === null || sendEtag(fresh) !== etag) return null
      stat = fresh
    }
    const { start, end } = payload as unknown as ByteRange
    let range: ByteRange | null = null
    if (reply.statusCode === 206) {
      const cr = parseContentRange(reply.getHeader('content-range'))
      if (cr === null || cr.total !== stat.size || cr.start !== start || cr.end !== end) return null
      range = { start, end }
    } else if (start !== 0 || end !== Math.max(0, stat.size - 1)) {
      return null
    }
    // @fastify/send opens the path after its stat: a stream reading another
    // version (the file replaced or rewritten in between, as by a deploy)
    // must not get the digests of the version `stat` describes.
    const opened = await openedStat(payload)
    const stale = opened === null || !sameFile(opened, stat)
    file = { path, stat, stream: payload, range, cachedOnly: false, stale }
  }
  if (typeof etag === 'string') cache.remember(aliasOf(request, etag, encoding), file.path)
  return file
}

/**
 * The file holding the representation before content coding: for a
 * pre-compressed file (`foo.js.br` sent with `Content-Encoding: br`), the
 * original next to it; null when that original is gone. Any other file is
 * its own identity.
 */
export async function identityFile (file: StaticFile, encoding: unknown): Promise<StaticFile | null> {
  const suffix = typeof encoding === 'string' ? CODED_SUFFIXES.get(encoding) : undefined
  if (suffix === undefined || !file.path.endsWith(suffix)) return file
  const path = file.path.slice(0, -suffix.length)
  const stat = await statOf(path)
  return stat === null ? null : { path, stat }
}
