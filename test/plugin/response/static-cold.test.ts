// A cold cache with the real @fastify/static: `fileHashing: 'background'`
// answers at once without the whole-file digests and hashes the file for
// later requests; `fileSidecars` takes them from checksum files written
// after the file (as sha256sum prints them), each checked against the file
// in the background. A sidecar older than its file is never read; a wrong
// one never ends a GET cleanly, and is replaced by the file's own digests.
import { test } from 'tap'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { constants } from 'node:http2'
import { gunzipSync } from 'node:zlib'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import digestFields = require('../../../lib/index')
import { readSidecars } from '../../../lib/core/file-cache'
import { buildApp, sf, pattern, EMPTY_SHA256 } from '../../helpers'
import { h2Session } from '../../http2-helpers'
import { staticSite, type StaticSite } from './static-helpers'
import { sleep } from '../../helpers'

interface Closeable { teardown (fn: () => unknown): void }

/** staticSite serving `files`, with Content-Digest and Repr-Digest unless `digest` says otherwise; warnings logged. */
async function site (
  t: Closeable, files: Record<string, Buffer | string>, digest: FastifyDigestFieldsOptions
): Promise<StaticSite> {
  return await staticSite(t, files, { digest: { contentDigest: true, reprDigest: true, ...digest }, logLevel: 'warn' })
}

const hex = (data: Buffer | string, alg = 'sha256'): string => createHash(alg).update(data).digest('hex')

/** HEAD until its Repr-Digest is there (the background pass ended: no event tells it), at most two seconds. */
async function settled (app: FastifyInstance, url: string): Promise<unknown> {
  for (let i = 0; i < 200; i++) {
    const value = (await app.inject({ method: 'HEAD', url })).headers['repr-digest']
    if (value !== undefined) return value
    await sleep(10)
  }
  return undefined
}

test('fileHashing: \'background\': a cold file is answered at once without its whole-file digests, then hashed for later requests', async (t) => {
  // Each request below is the first for its file (4 MiB: hashed long after the answer).
  const big = pattern(4 * 1024 * 1024)
  const { app, logs, omitted } = await site(t, { 'head.bin': big, 'part.bin': big, 'whole.bin': big }, { fileHashing: 'background', maxBufferSize: 1000 })
  const head = await app.inject({ method: 'HEAD', url: '/head.bin' })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
  t.equal(head.headers['repr-digest'], undefined, 'not known yet: left out')
  t.same(omitted.pop(), { reason: 'file-not-hashed', fields: ['Repr-Digest'] }, 'reply.digestsOmitted says why')
  const part = await app.inject({ url: '/part.bin', headers: { range: 'bytes=0-9' } })
  t.equal(part.statusCode, 206)
  t.equal(part.headers['content-digest'], sf(big.subarray(0, 10)), 'the part\'s own digest does not wait')
  t.equal(part.headers['repr-digest'], undefined)
  t.same(omitted.pop(), { reason: 'file-not-hashed', fields: ['Repr-Digest'] })
  const whole = await app.inject({ url: '/whole.bin', headers: { te: 'trailers' } })
  t.ok(whole.rawPayload.equals(big))
  t.equal(whole.trailers['content-digest'], sf(big), 'a 200 is hashed as it is sent')
  t.equal(whole.headers['repr-digest'], undefined)
  const warnings = logs.filter((l) => l.includes('file-not-hashed'))
  t.equal(warnings.length, 2, 'one warning per route (@fastify/static\'s HEAD and GET) and reason')
  t.match(warnings[0], /fileHashing: 'wait'/)

  for (const name of ['head.bin', 'part.bin', 'whole.bin']) t.equal(await settled(app, `/${name}`), sf(big), `${name}: hashed in the background`)
  const warm = await app.inject({ url: '/head.bin', headers: { range: 'bytes=0-9' } })
  t.equal(warm.headers['repr-digest'], sf(big))
  t.equal(omitted.pop(), null)
  const get = await app.inject('/part.bin')
  t.equal(get.headers['content-digest'], sf(big), 'now from the cache, as a header')
  t.equal(get.headers['repr-digest'], sf(big))
})

test('fileHashing: \'background\': passes run two at a time, and at most fileCacheSize wait', async (t) => {
  const names = Array.from({ length: 12 }, (_, i) => `f${i}.bin`)
  const files = Object.fromEntries(names.map((n, i) => [n, pattern(200000 + i)]))
  const { app, disk } = await site(t, files, { fileHashing: 'background', fileCacheSize: 3, reprDigest: true, contentDigest: false })
  // Twelve cold files at once: two passes start, three wait, the rest are not started.
  const first = await Promise.all(names.map((n) => app.inject({ method: 'HEAD', url: `/${n}` })))
  t.ok(first.every((r) => r.headers['repr-digest'] === undefined), 'none known yet')
  // Each one is hashed once a request finds a free place (three fit in the cache at once).
  for (const n of names) t.equal(await settled(app, `/${n}`), sf(disk(n)), n)
})

test('readSidecars: what sha256sum, sha512sum, shasum --tag and openssl dgst print, and nothing else', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'fdf-sidecar-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'app.js')
  /** The sha-256 (or `algorithm`) digest a sidecar holding `text` gives. */
  const read = async (text: string, algorithm: 'sha-256' | 'sha-512' = 'sha-256'): Promise<Buffer | null> => {
    writeFileSync(file + (algorithm === 'sha-256' ? '.sha256' : '.sha512'), text)
    return (await readSidecars(file, 0, [algorithm]))?.get(algorithm) ?? null
  }
  const digest = createHash('sha256').update('x').digest()
  const h = digest.toString('hex')
  const good = [
    h, `${h}\n`, `${h}\r\n`, h.toUpperCase(), `${h}  app.js\n`, `${h} *app.js\n`, `${h}  /var/www/app.js\n`,
    `SHA256 (app.js) = ${h}\n`, `SHA2-256(app.js)= ${h}\n`
  ]
  for (const text of good) t.same(await read(text), digest, JSON.stringify(text))
  const bad = [
    '', '\n', h.slice(2), `${h}00`, `${h}\n${h}\n`, `${h}\n\n`, `x${h}`, ` ${h}`, `${h.slice(1)}g`,
    `${h}  app.js\nother`, `SHA256 (app.js) = ${h.slice(2)}`, `\\${h}  a\\nb\n`
  ]
  for (const text of bad) t.equal(await read(text), null, JSON.stringify(text))
  t.equal(await read(`${h}  app.js`, 'sha-512'), null, 'a sha-256 digest is no sha-512 one')
})

test('fileSidecars: digests from checksum files written after the file, answered at once', async (t) => {
  const app1 = 'console.log("app")\n'.repeat(100)
  const { app, write, logs } = await site(t, { 'app.js': app1, 'lib.js': 'lib', 'raw.js': 'raw', 'bsd.js': 'bsd' }, {
    fileHashing: 'background', fileSidecars: true, reprDigest: ['sha-256', 'sha-512']
  })
  // Written after their files: sha256sum and sha512sum output, hex alone, the BSD form.
  write('app.js.sha256', `${hex(app1)}  app.js\n`)
  write('app.js.sha512', `${hex(app1, 'sha512')}  app.js\n`)
  write('lib.js.sha256', hex('lib'))
  write('bsd.js.sha256', `SHA256 (bsd.js) = ${hex('bsd')}\n`)
  write('bsd.js.sha512', `SHA512 (bsd.js) = ${hex('bsd', 'sha512')}\n`)
  const head = await app.inject({ method: 'HEAD', url: '/app.js' })
  t.equal(head.headers['repr-digest'], `${sf(app1)}, ${sf(app1, 'sha-512')}`, 'cold, yet known at once')
  const get = await app.inject({ url: '/app.js', headers: { range: 'bytes=0-4' } })
  t.equal(get.headers['repr-digest'], `${sf(app1)}, ${sf(app1, 'sha-512')}`)
  t.equal(get.headers['content-digest'], sf(app1.slice(0, 5)))
  const bsd = await app.inject({ method: 'HEAD', url: '/bsd.js' })
  t.equal(bsd.headers['repr-digest'], `${sf('bsd')}, ${sf('bsd', 'sha-512')}`)
  const one = await app.inject({ method: 'HEAD', url: '/lib.js', headers: { 'want-repr-digest': 'sha-256=1' } })
  t.equal(one.headers['repr-digest'], sf('lib'), 'the algorithms asked for have sidecars')
  const both = await app.inject({ method: 'HEAD', url: '/raw.js' })
  t.equal(both.headers['repr-digest'], undefined, 'no sidecar: hashed in the background')
  t.equal(await settled(app, '/raw.js'), `${sf('raw')}, ${sf('raw', 'sha-512')}`)
  t.equal(await settled(app, '/lib.js'), `${sf('lib')}, ${sf('lib', 'sha-512')}`, 'sha-512 has no sidecar: hashed')
  // No event tells a right sidecar's check ended (a wrong one's is a log line): time for the passes to end.
  await sleep(50)
  t.notOk(logs.some((l) => l.includes('does not match')), 'every sidecar checked, none wrong')
})

test('fileSidecars: a sidecar older than its file, or not one, is not read', async (t) => {
  const { app, dir, write, disk } = await site(t, { 'a.js': 'version 1' }, { fileSidecars: true, reprDigest: true })
  write('a.js.sha256', `${hex('version 1')}  a.js\n`)
  // The sidecar is of an earlier version: the file rewritten until its ctime is after the sidecar's.
  const sidecarChanged = statSync(join(dir, 'a.js.sha256')).ctimeMs
  do write('a.js', 'version 2')
  while (statSync(join(dir, 'a.js')).ctimeMs <= sidecarChanged)
  t.equal((await app.inject({ method: 'HEAD', url: '/a.js' })).headers['repr-digest'], sf(disk('a.js')), 'stale sidecar: the file is hashed')
  const get = await app.inject('/a.js')
  t.equal(get.statusCode, 200)
  t.equal(get.headers['repr-digest'], sf('version 2'))

  // Not sidecars: a directory, a FIFO (never waited on), too large, two lines, another digest's length.
  write('b.js', 'b')
  mkdirSync(join(dir, 'b.js.sha256'))
  write('c.js', 'c')
  execFileSync('mkfifo', [join(dir, 'c.js.sha256')])
  const wrong = createHash('sha256').update('wrong').digest('hex')
  const texts: Record<string, string> = { d: `${wrong}  ${'d'.repeat(1100)}`, e: `${wrong}\n${wrong}\n`, f: wrong.slice(4) }
  for (const [name, text] of Object.entries(texts)) {
    write(`${name}.js`, name)
    write(`${name}.js.sha256`, text)
  }
  for (const name of ['b', 'c', 'd', 'e', 'f']) {
    const res = await app.inject({ method: 'HEAD', url: `/${name}.js` })
    t.equal(res.headers['repr-digest'], sf(name), `${name}: hashed`)
  }
})

/** A GET over a real connection: its status, whether it ended cleanly, its head and the bytes received. */
function get (port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number, complete: boolean, headers: Record<string, unknown>, body: Buffer }> {
  return new Promise((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', () => {})
      res.on('close', () => resolve({ status: res.statusCode as number, complete: res.complete, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', () => resolve({ status: 0, complete: false, headers: {}, body: Buffer.alloc(0) }))
    req.end()
  })
}

/** Log lines at level warn or above. */
const warnings = (logs: string[]): Array<{ level: number, msg: string }> => logs.map((l) => JSON.parse(l) as { level: number, msg: string }).filter((l) => l.level >= 40)

// A wrong sidecar newer than its file (300,000 bytes): the first GET goes out under its digest and is cut off, one
// log line names the sidecar and the file, and later requests get the file's own digests.
test('fileSidecars: a wrong sidecar never ends a GET cleanly; one log line names it; it is never used again', async (t) => {
  const content = 'the real file\n'.repeat(21429).slice(0, 300000)
  for (const fileHashing of ['wait', 'background'] as const) {
    const { app, write, logs, dir } = await site(t, { 'w.js': content }, { fileHashing, fileSidecars: true, reprDigest: true, unencodedDigest: true })
    write('w.js.sha256', `${'1'.repeat(64)}  w.js\n`)
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    const first = await get(port, '/w.js')
    t.equal(first.status, 200)
    t.equal(first.headers['content-digest'], `sha-256=:${Buffer.alloc(32, 0x11).toString('base64')}:`, `${fileHashing}: the sidecar's value went out`)
    t.notOk(first.complete, `${fileHashing}: so the response was cut off`)
    t.ok(first.body.length < content.length, `${fileHashing}: not every byte`)
    t.same(warnings(logs).map((l) => l.msg), [`The sidecar ${join(dir, 'w.js.sha256')} does not match the file ${join(dir, 'w.js')} (sha-256): the response made with it failed, and the file's own digests are used from now on`],
      `${fileHashing}: one log line, naming the sidecar and the file`)
    // Background: the file is hashed for later requests.
    t.equal(await settled(app, '/w.js'), sf(content))
    const next = await get(port, '/w.js')
    t.ok(next.complete, `${fileHashing}: then clean`)
    t.equal(next.headers['repr-digest'], sf(content))
    t.equal(next.headers['content-digest'], sf(next.body))
    t.equal(next.headers['unencoded-digest'], sf(content))
    const head = await app.inject({ method: 'HEAD', url: '/w.js' })
    t.equal(head.headers['repr-digest'], sf(content), `${fileHashing}: that sidecar is not read again`)
    t.equal(warnings(logs).filter((l) => /sidecar|changed while/.test(l.msg)).length, 1, `${fileHashing}: nothing more is logged of it`)
  }
})

test('fileSidecars: a small file held back whole by its check still gets its status line out before the cut', async (t) => {
  const content = 'small\n'
  const { app, write } = await site(t, { 's.js': content }, { fileSidecars: true })
  write('s.js.sha256', `${'1'.repeat(64)}  s.js\n`)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  // One chunk, held back until the end check: nothing was written when it fails.
  const first = await get(port, '/s.js')
  t.equal(first.status, 200, 'a response, never an empty reply')
  t.equal(first.headers['content-digest'], `sha-256=:${Buffer.alloc(32, 0x11).toString('base64')}:`)
  t.notOk(first.complete, 'cut off')
  t.equal(first.body.length, 0)
  const next = await get(port, '/s.js')
  t.ok(next.complete)
  t.equal(next.body.toString(), content)
})

test('fileSidecars: with @fastify/compress, a wrong sidecar gets a 500 when nothing was sent yet, a cut-off response when streaming', async (t) => {
  const content = 'the real file\n'.repeat(5000)
  for (const te of [false, true]) {
    const dir = await mkdtemp(join(tmpdir(), 'digest-cold-gz-'))
    t.teardown(() => rm(dir, { recursive: true, force: true }))
    writeFileSync(join(dir, 'w.js'), content)
    writeFileSync(join(dir, 'w.js.sha256'), `${'1'.repeat(64)}  w.js\n`)
    const logs: string[] = []
    const app = await buildApp(t, { contentDigest: true, reprDigest: true, fileSidecars: true }, { logger: { level: 'warn', stream: { write: (line: string) => { logs.push(line) } } } })
    await app.register(compress, { threshold: 0 })
    await app.register(fastifyStatic, { root: dir, setHeaders: digestFields.staticHeaders })
    await app.listen({ port: 0, host: '127.0.0.1' })
    const port = (app.server.address() as { port: number }).port
    const headers: Record<string, string> = te ? { 'accept-encoding': 'gzip', te: 'trailers' } : { 'accept-encoding': 'gzip' }
    const first = await get(port, '/w.js', headers)
    if (te) {
      t.equal(first.status, 200, 'streaming: the status line went out')
      t.equal(first.headers['content-encoding'], 'gzip')
      t.notOk(first.complete, 'streaming: cut off, never an empty reply')
    } else {
      // The fields go in the header section: the gzip bytes are read into memory first, and nothing was sent.
      t.equal(first.status, 500, 'buffered: the error answer')
      t.ok(first.complete)
      t.equal(first.headers['content-encoding'], undefined, 'not the gzip body\'s coding')
      t.equal(first.headers['content-type'], 'application/problem+json')
      t.equal(Number(first.headers['content-length']), first.body.length, 'its own length')
      t.match(JSON.parse(first.body.toString()), { status: 500, code: 'FST_DIGEST_SIDECAR_WRONG' })
      t.notMatch(first.body.toString(), dir, 'no path in the answer')
      t.equal(first.headers['content-digest'], sf(first.body), 'digests of its own body')
    }
    const lines = warnings(logs)
    t.equal(lines.length, 1, `TE ${te}: one log line`)
    t.match(lines[0]?.msg, /^The sidecar .*w\.js\.sha256 does not match the file .*w\.js /)
    const next = await get(port, '/w.js', headers)
    t.ok(next.complete, `TE ${te}: then clean`)
    t.equal(gunzipSync(next.body).toString(), content)
  }
})

test('fileSidecars over HTTP/2: a wrong sidecar gets the GET\'s stream reset', async (t) => {
  const content = 'the real file\n'.repeat(21429)
  const dir = await mkdtemp(join(tmpdir(), 'digest-cold-h2-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'w.js'), content)
  writeFileSync(join(dir, 'w.js.sha256'), `${'1'.repeat(64)}  w.js\n`)
  const app = await buildApp(t, { contentDigest: true, fileSidecars: true }, { http2: true, logger: { level: 'fatal' } } as object)
  await app.register(fastifyStatic, { root: dir, setHeaders: digestFields.staticHeaders })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const session = await h2Session(t, (app.server.address() as { port: number }).port)
  const fetch2 = (): Promise<{ rstCode: number | undefined, ended: boolean, digest: unknown }> => new Promise((resolve) => {
    const stream = session.request({ ':path': '/w.js' })
    let digest: unknown
    let ended = false
    stream.on('response', (h) => { digest = h['content-digest'] })
    stream.on('data', () => {})
    stream.on('end', () => { ended = true })
    stream.on('error', () => {})
    stream.on('close', () => resolve({ rstCode: stream.rstCode, ended, digest }))
  })
  const cut = await fetch2()
  t.not(cut.rstCode, constants.NGHTTP2_NO_ERROR, 'RST_STREAM')
  const next = await fetch2()
  t.ok(next.ended && next.rstCode === constants.NGHTTP2_NO_ERROR)
  t.equal(next.digest, sf(content))
})

test('fileSidecars: \'verified\': a sidecar answers only once a pass confirmed it; a wrong one never does', async (t) => {
  const content = 'the real file\n'.repeat(21429)
  const { app, write, logs } = await site(t, { 'w.js': content, 'r.js': content }, { fileSidecars: 'verified', reprDigest: true })
  write('w.js.sha256', `${'1'.repeat(64)}  w.js\n`)
  write('r.js.sha256', `${hex(content)}  r.js\n`)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as { port: number }).port
  const first = await get(port, '/w.js')
  t.ok(first.complete, 'the first GET waits for the file\'s own digests')
  t.equal(first.headers['repr-digest'], sf(content))
  t.match(warnings(logs).map((l) => l.msg), [/a sidecar checksum does not match its file/], 'the wrong sidecar is reported')
  const right = await get(port, '/r.js')
  t.ok(right.complete)
  t.equal(right.headers['repr-digest'], sf(content))
})
