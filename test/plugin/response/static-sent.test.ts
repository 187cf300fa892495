// What a file response streams is checked against the digests it was sent
// with, on real listening servers (HTTP/1.1 and h2c) with the real
// @fastify/static and @fastify/compress. The file is rewritten while it is
// being sent: after its headers (and digests, taken from the cache or read
// from the file on the side) went out, while the client holds the body back.
// No stat taken before the headers can see that, so the response must be
// cut off, never end cleanly with bytes that do not match its digests; the
// next request gets the new file's digests.
import { test } from 'tap'
import { randomBytes } from 'node:crypto'
import { closeSync, openSync, readFileSync, writeSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { constants } from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import compress from '@fastify/compress'
import Fastify, { type FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import digestFields = require('../../../lib/index')
import { sf } from '../../helpers'
import { h2Session } from '../../http2-helpers'

interface Closeable { teardown (fn: () => unknown): void }

// Far more than the socket buffers and the streams' read-ahead can hold, so
// the end of the file is read well after the client paused.
const SIZE = 32 * 1024 * 1024
const TAIL = 1024 * 1024

interface Site { port: number, path: string, logs: string[] }

async function site (t: Closeable, opts: { http2?: boolean, compress?: boolean, digest?: FastifyDigestFieldsOptions } = {}): Promise<Site> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-sent-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'big.bin')
  writeFileSync(path, randomBytes(SIZE))
  const logs: string[] = []
  const logger = { level: 'warn', stream: { write: (line: string) => { logs.push(line) } } }
  const app: FastifyInstance = (opts.http2 === true ? Fastify({ http2: true, logger }) : Fastify({ logger })) as unknown as FastifyInstance
  t.teardown(() => app.close())
  if (opts.compress === true) await app.register(compress, { threshold: 1 })
  await app.register(digestFields, opts.digest ?? { contentDigest: true, reprDigest: true })
  await app.register(fastifyStatic, { root: dir, setHeaders: digestFields.staticHeaders })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { port: (app.server.address() as { port: number }).port, path, logs }
}

/** Overwrite the last TAIL bytes of the file in place: same size, same inode. */
function rewriteTail (path: string): void {
  const fd = openSync(path, 'r+')
  writeSync(fd, randomBytes(TAIL), 0, TAIL, SIZE - TAIL)
  closeSync(fd)
}

interface Received {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
  /** The body ended cleanly (HTTP/1.1: every byte and the end; h2: END_STREAM, no reset). */
  complete: boolean
}

/** A GET over HTTP/1.1; `meanwhile` runs once the head arrived, while the body is held back. */
function get (port: number, headers: Record<string, string>, meanwhile = (): void => {}, method = 'GET'): Promise<Received> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/big.bin', method, headers }, (res) => {
      res.pause()
      meanwhile()
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', () => {})
      res.on('close', () => resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks), complete: res.complete }))
      res.resume()
    })
    req.on('error', () => resolve({ status: 0, headers: {}, body: Buffer.alloc(0), complete: false }))
    req.end()
  })
}

type TapTest = Parameters<Parameters<typeof test>[0]>[0]

const cases: Array<[string, Record<string, string>, boolean, boolean]> = [
  // name, request headers, @fastify/compress registered, Content-Digest sent (the gzip stream is larger than
  // maxBufferSize and the client asks for no trailers: without it)
  ['200: Content-Digest and Repr-Digest from the cache', {}, false, true],
  ['200 gzip: Repr-Digest from the cache, the file coded by @fastify/compress', { 'accept-encoding': 'gzip' }, true, false],
  ['206: the part\'s Content-Digest read from the file before sending', { range: `bytes=1-${SIZE - 1}` }, false, true]
]

/** Content-Digest as `expected` says: the received bytes' digest, or none. */
function contentDigestOf (t: TapTest, res: { headers: IncomingHttpHeaders, body: Buffer }, expected: boolean, label: string): void {
  t.equal(res.headers['content-digest'], expected ? sf(res.body) : undefined, label)
}

for (const [name, headers, withCompress, contentDigest] of cases) {
  test(`HTTP/1.1, ${name}: a file rewritten while it is sent is cut off`, async (t) => {
    const { port, path, logs } = await site(t, { compress: withCompress })
    const v1 = readFileSync(path)
    const head = await get(port, {}, undefined, 'HEAD')
    t.equal(head.headers['repr-digest'], sf(v1), 'HEAD: cached; nothing streamed, nothing to check')
    const good = await get(port, headers)
    t.ok(good.complete, 'unchanged: complete')
    const first = headers.range === undefined ? 0 : 1
    t.ok(good.headers['content-encoding'] === 'gzip' || good.body.equals(v1.subarray(first)), 'unchanged: every byte')
    contentDigestOf(t, good, contentDigest, 'unchanged: Content-Digest of the bytes received')

    const cut = await get(port, headers, () => rewriteTail(path))
    t.equal(cut.status, good.status)
    t.equal(cut.headers['repr-digest'], sf(v1), 'the digests went out before the rewrite')
    t.notOk(cut.complete, 'cut off, not a clean end')
    t.not(cut.body.length, good.body.length, 'the last bytes were held back')
    t.ok(logs.some((l) => l.includes('FST_DIGEST_FILE_CHANGED')), 'logged')

    const v2 = readFileSync(path)
    const next = await get(port, headers)
    t.ok(next.complete, 'the next request')
    t.equal(next.headers['repr-digest'], sf(v2), 'gets the new file\'s digest')
    contentDigestOf(t, next, contentDigest, 'the next request: Content-Digest of the bytes received')
  })
}

test('HTTP/2: a file rewritten while it is sent gets its stream reset', async (t) => {
  const { port, path, logs } = await site(t, { http2: true })
  const v1 = readFileSync(path)
  const session = await h2Session(t, port)
  const get2 = (meanwhile: () => void): Promise<Received & { rstCode: number | undefined }> => new Promise((resolve) => {
    const stream = session.request({ ':path': '/big.bin' })
    const chunks: Buffer[] = []
    let headers: IncomingHttpHeaders = {}
    let ended = false
    stream.on('response', (h) => {
      headers = h as IncomingHttpHeaders
      stream.pause()
      meanwhile()
      stream.resume()
    })
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => { ended = true })
    stream.on('error', () => {})
    stream.on('close', () => {
      const rstCode = stream.rstCode
      resolve({ status: Number(headers[':status']), headers, body: Buffer.concat(chunks), complete: ended && rstCode === constants.NGHTTP2_NO_ERROR, rstCode })
    })
  })
  const good = await get2(() => {})
  t.ok(good.complete)
  t.equal(good.headers['content-digest'], sf(good.body))
  t.ok(good.body.equals(v1))
  const cut = await get2(() => rewriteTail(path))
  t.equal(cut.headers['content-digest'], sf(v1), 'the digest went out before the rewrite')
  t.notOk(cut.complete, 'not a clean end')
  t.not(cut.rstCode, constants.NGHTTP2_NO_ERROR, 'RST_STREAM')
  t.ok(cut.body.length < SIZE)
  t.ok(logs.some((l) => l.includes('FST_DIGEST_FILE_CHANGED')))
  const next = await get2(() => {})
  t.ok(next.complete)
  t.equal(next.headers['content-digest'], sf(readFileSync(path)))
})
