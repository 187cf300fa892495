// With the real @fastify/static over temporary files: 200, 206 (first byte,
// middle, suffix, open, whole), HEAD, 416, multi-range, pre-compressed files,
// files larger than maxBufferSize, files rewritten between requests, and
// @fastify/compress in both registration orders. Every Content-Digest is
// recomputed from the bytes the client received, every Repr-Digest from the
// file on disk.
import { test } from 'tap'
import { createReadStream, renameSync, statSync, utimesSync, writeFileSync, type Stats } from 'node:fs'
import { basename, join } from 'node:path'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import digestFields = require('../../../lib/index')
import { decode, sf, pattern, CODINGS, EMPTY_SHA256 } from '../../helpers'
import { loadedMajor } from '../../loaded-majors'
import { staticSite } from './static-helpers'

const STATIC_MAJOR = loadedMajor('@fastify/static')
const COMPRESS_MAJOR = loadedMajor('@fastify/compress')

const { staticHeaders } = digestFields
const STALE = 'sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:'

/** Header and trailer fields together. */
function fields (res: { headers: Record<string, unknown>, trailers: Record<string, unknown> }): Record<string, unknown> {
  return { ...res.headers, ...res.trailers }
}

test('RFC 9530 B.3: a 206 of {"hello": "world"}, byte for byte', async (t) => {
  const ITEM = '{"hello": "world"}\n'
  for (const strict of [false, true]) {
    const { app } = await staticSite(t, { 123: ITEM }, { digest: { strict, contentDigest: true, reprDigest: true } })
    const res = await app.inject({ url: '/123', headers: { range: 'bytes=10-18' } })
    const name = `strict=${strict}`
    t.equal(res.statusCode, 206, name)
    t.equal(res.headers['content-range'], 'bytes 10-18/19', name)
    t.equal(res.body, '"world"}\n', name)
    t.equal(res.headers['content-length'], '9', name)
    t.equal(res.headers['content-digest'], 'sha-256=:jjcgBDWNAtbYUXI37CVG3gRuGOAjaaDRGpIUFsdyepQ=:', name)
    t.equal(res.headers['repr-digest'], 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:', name)
  }
  // The same exchange asked for with Want-* alone.
  const { app } = await staticSite(t, { 123: ITEM }, { digest: {} })
  const res = await app.inject({ url: '/123', headers: { range: 'bytes=10-18', 'want-content-digest': 'sha-256=1', 'want-repr-digest': 'sha-256=1' } })
  t.equal(res.headers['content-digest'], 'sha-256=:jjcgBDWNAtbYUXI37CVG3gRuGOAjaaDRGpIUFsdyepQ=:')
  t.equal(res.headers['repr-digest'], 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:')
})

const RANGES: Array<[string, string | undefined, number, number, number]> = [
  // name, Range, status, first, last
  ['whole file', undefined, 200, 0, 4999],
  ['first byte', 'bytes=0-0', 206, 0, 0],
  ['middle range', 'bytes=1000-1999', 206, 1000, 1999],
  ['suffix range', 'bytes=-100', 206, 4900, 4999],
  ['open range', 'bytes=1000-', 206, 1000, 4999],
  ['the whole file as a range', 'bytes=0-', 206, 0, 4999]
]

test('ranges: Content-Digest of the part received, Repr-Digest of the whole file', async (t) => {
  const digest: FastifyDigestFieldsOptions = { contentDigest: true, reprDigest: ['sha-256', 'sha-512'] }
  {
    const { app, disk } = await staticSite(t, { 'data.bin': pattern(5000) }, { digest })
    const file = disk('data.bin')
    for (const [name, range, status, first, last] of RANGES) {
      for (const te of [undefined, 'trailers']) {
        const label = `${name}, te=${te}`
        const res = await app.inject({ url: '/data.bin', headers: { ...(range === undefined ? {} : { range }), ...(te === undefined ? {} : { te }) } })
        t.equal(res.statusCode, status, label)
        t.ok(res.rawPayload.equals(file.subarray(first, last + 1)), `${label}: the bytes`)
        if (status === 206) t.equal(res.headers['content-range'], `bytes ${first}-${last}/5000`, label)
        const all = fields(res)
        t.equal(all['content-digest'], sf(res.rawPayload), `${label}: Content-Digest`)
        t.equal(res.headers['repr-digest'], `${sf(file)}, ${sf(file, 'sha-512')}`, `${label}: Repr-Digest, a header`)
        if (te !== undefined && status === 206) {
          t.equal(res.headers['content-digest'], undefined, `${label}: the part's digest as a trailer`)
          t.equal(res.headers.trailer, 'content-digest', label)
        } else {
          t.same(res.trailers, {}, `${label}: no trailers (the whole file's digest is known)`)
          t.equal(res.headers['content-length'], String(res.rawPayload.length), label)
        }
      }
    }
  }
})

test('a file larger than maxBufferSize, with and without TE: trailers', async (t) => {
  const big = pattern(300 * 1024) // more than one read of the hasher, far more than the buffer
  const digest = { contentDigest: true, reprDigest: true, maxBufferSize: 1000 }
  const { app, disk, logs } = await staticSite(t, { 'big.bin': big }, { digest, logLevel: 'debug' })
  const file = disk('big.bin')
  const cases: Array<[string, Record<string, string>, number]> = [
    ['200', {}, 200],
    ['200 te', { te: 'trailers' }, 200],
    ['206 large part', { range: 'bytes=100-250000' }, 206],
    ['206 large part te', { range: 'bytes=100-250000', te: 'trailers' }, 206],
    ['206 part that fits the buffer', { range: 'bytes=5000-5999' }, 206],
    ['206 open range', { range: 'bytes=1000-' }, 206]
  ]
  for (const [name, headers, status] of cases) {
    const res = await app.inject({ url: '/big.bin', headers })
    t.equal(res.statusCode, status, name)
    const all = fields(res)
    t.equal(all['content-digest'], sf(res.rawPayload), `${name}: Content-Digest`)
    t.equal(res.headers['repr-digest'], sf(file), `${name}: Repr-Digest`)
    if (headers.te === undefined || status === 200) {
      t.equal(res.headers['content-digest'], sf(res.rawPayload), `${name}: as a header`)
      t.equal(res.headers['content-length'], String(res.rawPayload.length), name)
    } else {
      t.equal(res.trailers['content-digest'], sf(res.rawPayload), `${name}: as a trailer`)
    }
  }
  t.notOk(logs.some((l) => l.includes('digests omitted')), 'nothing omitted')
})

test('HEAD: Repr-Digest of the file, Content-Digest of empty content', async (t) => {
  const { app, disk } = await staticSite(t, { 'data.bin': pattern(5000) })
  const file = disk('data.bin')
  const head = await app.inject({ method: 'HEAD', url: '/data.bin' })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  t.equal(head.headers['content-length'], '5000')
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
  t.equal(head.headers['repr-digest'], sf(file))
  const ranged = await app.inject({ method: 'HEAD', url: '/data.bin', headers: { range: 'bytes=0-99' } })
  t.equal(ranged.statusCode, 206)
  t.equal(ranged.headers['content-range'], 'bytes 0-99/5000')
  t.equal(ranged.headers['content-length'], '100')
  t.equal(ranged.headers['content-digest'], EMPTY_SHA256, 'HEAD with Range: still no content')
  t.equal(ranged.headers['repr-digest'], sf(file))
  const stale = await app.inject({ method: 'HEAD', url: '/data.bin', headers: { 'repr-digest': STALE } })
  t.equal(stale.statusCode, 406)
  t.equal(stale.headers['repr-digest'], sf(file))
  const current = await app.inject({ method: 'HEAD', url: '/data.bin', headers: { 'repr-digest': sf(file) } })
  t.equal(current.statusCode, 200)
})

test('without staticHeaders: a file is a stream like any other', async (t) => {
  const { app, disk } = await staticSite(t, { 'data.bin': pattern(3000) }, { headers: false })
  const file = disk('data.bin')
  const get = await app.inject('/data.bin')
  t.equal(get.headers['content-digest'], sf(file), 'a 200: hashed as it flows')
  t.equal(get.headers['repr-digest'], sf(file))
  const part = await app.inject({ url: '/data.bin', headers: { range: 'bytes=1-2' } })
  t.equal(part.statusCode, 206)
  t.equal(part.headers['content-digest'], sf(part.rawPayload), 'a 206: its part hashed')
  t.equal(part.headers['repr-digest'], undefined, 'but the file is unknown')
  const head = await app.inject({ method: 'HEAD', url: '/data.bin' })
  t.equal(head.headers['repr-digest'], undefined, 'a HEAD: unknown, even after a GET')
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
})

test('staticHeaders composed with setHeaders of your own', async (t) => {
  // @fastify/static 10 passes the reply, 8 and 9 the raw response (README).
  const setHeaders = STATIC_MAJOR >= 10
    ? (reply: FastifyReply, path: string, stat: Stats) => {
        staticHeaders(reply, path, stat)
        reply.header('x-file', basename(path))
      }
    : (res: ServerResponse, path: string, stat: Stats) => {
        staticHeaders(res, path, stat)
        res.setHeader('x-file', basename(path))
      }
  const { app, disk } = await staticSite(t, { 'a.txt': 'composed\n' }, { static: { setHeaders: setHeaders as never } })
  const res = await app.inject({ method: 'HEAD', url: '/a.txt' })
  t.equal(res.headers['x-file'], 'a.txt')
  t.equal(res.headers['repr-digest'], sf(disk('a.txt')))
})

test('pre-compressed files: Content-Digest over the coded bytes; Repr-Digest over the original (default) or the coded file (strict); Unencoded-Digest over the original', async (t) => {
  const original = Buffer.from('console.log("pre-compressed")\n'.repeat(200))
  const files = {
    'app.js': original,
    'app.js.br': brotliCompressSync(original),
    'app.js.gz': gzipSync(original),
    'lone.js.gz': gzipSync('only the coded file exists\n')
  }
  for (const strict of [false, true]) {
    const digest: FastifyDigestFieldsOptions = { strict, unencodedDigest: true, contentDigest: true, reprDigest: true }
    const { app, disk } = await staticSite(t, files, { digest, static: { preCompressed: true } })
    const cases: Array<[string, string, Record<string, string>, string, number]> = [
      ['GET', '/app.js', { 'accept-encoding': 'br' }, 'app.js.br', 200],
      ['GET', '/app.js', { 'accept-encoding': 'gzip' }, 'app.js.gz', 200],
      ['GET', '/app.js', {}, 'app.js', 200],
      ['GET', '/app.js', { 'accept-encoding': 'br', range: 'bytes=5-20' }, 'app.js.br', 206],
      ['GET', '/app.js', { 'accept-encoding': 'gzip', range: 'bytes=0-9', te: 'trailers' }, 'app.js.gz', 206],
      ['GET', '/app.js', { 'accept-encoding': 'br', range: 'bytes=0-9,20-29' }, 'app.js.br', 200],
      ['HEAD', '/app.js', { 'accept-encoding': 'gzip' }, 'app.js.gz', 200],
      ['HEAD', '/app.js', { 'accept-encoding': 'br', range: 'bytes=0-9' }, 'app.js.br', 206]
    ]
    for (const [method, url, headers, sent, status] of cases) {
      const res = await app.inject({ method: method as 'GET', url, headers })
      const label = `strict=${strict} ${method} ${JSON.stringify(headers)}`
      const coded = disk(sent)
      const all = fields(res)
      t.equal(res.statusCode, status, label)
      t.equal(res.headers['content-encoding'], sent === 'app.js' ? undefined : sent.endsWith('.br') ? 'br' : 'gzip', label)
      if (method === 'HEAD') {
        t.equal(all['content-digest'], EMPTY_SHA256, label)
      } else {
        t.ok(res.rawPayload.equals(status === 200 ? coded : coded.subarray(...(headers.range === 'bytes=5-20' ? [5, 21] : [0, 10]))), `${label}: the bytes`)
        t.equal(all['content-digest'], sf(res.rawPayload), `${label}: Content-Digest of the coded bytes sent`)
      }
      t.equal(res.headers['repr-digest'], strict ? sf(coded) : sf(disk('app.js')), `${label}: Repr-Digest`)
      t.equal(all['unencoded-digest'], sf(disk('app.js')), `${label}: Unencoded-Digest, the original's in both modes`)
    }
    const lone = await app.inject({ url: '/lone.js', headers: { 'accept-encoding': 'gzip' } })
    t.equal(lone.headers['content-encoding'], 'gzip')
    t.equal(lone.headers['content-digest'], sf(lone.rawPayload))
    t.equal(lone.headers['repr-digest'], strict ? sf(disk('lone.js.gz')) : undefined, `strict=${strict}: no original on disk, no identity digest`)
    t.equal(lone.headers['unencoded-digest'], undefined, `strict=${strict}: no original on disk, no Unencoded-Digest`)
  }
})

test('Unencoded-Digest of a file: the whole file for 200, 206 and HEAD, with @fastify/compress\'s every coding, in both modes', async (t) => {
  const text = Buffer.from('body { color: rgb(1, 2, 3) }\n'.repeat(400))
  for (const strict of [false, true]) {
    for (const order of ['compress-first', 'digest-first'] as const) {
      const digest: FastifyDigestFieldsOptions = { strict, contentDigest: true, unencodedDigest: ['sha-256', 'sha-512'], maxBufferSize: 1000 }
      const { app, disk } = await staticSite(t, { 'a.css': text }, { digest, compress: order })
      const whole = `${sf(disk('a.css'))}, ${sf(disk('a.css'), 'sha-512')}`
      for (const coding of [...CODINGS, 'identity']) {
        for (const [method, extra] of [['GET', {}], ['GET', { te: 'trailers' }], ['GET', { range: 'bytes=10-99' }], ['GET', { range: 'bytes=10-99', te: 'trailers' }], ['HEAD', {}], ['HEAD', { range: 'bytes=0-9' }]] as const) {
          const res = await app.inject({ method, url: '/a.css', headers: { 'accept-encoding': coding, ...extra } })
          const label = `strict=${strict} ${order} ${coding} ${method} ${JSON.stringify(extra)}`
          t.equal(res.headers['unencoded-digest'], whole, `${label}: a header, the whole file's`)
          t.equal(res.statusCode, 'range' in extra ? 206 : 200, `${label}: status`)
          if (method === 'GET' && !('range' in extra)) {
            t.ok(decode(res.rawPayload, res.headers['content-encoding']).equals(text), label)
          }
        }
      }
    }
  }
})

test('multi-range requests: @fastify/send answers the whole file, and so do the digests', async (t) => {
  const { app, disk } = await staticSite(t, { 'data.bin': pattern(2000) })
  const res = await app.inject({ url: '/data.bin', headers: { range: 'bytes=0-9,20-29' } })
  t.equal(res.statusCode, 200)
  t.ok(res.rawPayload.equals(disk('data.bin')))
  t.equal(res.headers['content-digest'], sf(res.rawPayload))
  t.equal(res.headers['repr-digest'], sf(disk('data.bin')))
})

test('416: the digests of its own error body', async (t) => {
  const { app } = await staticSite(t, { 'data.bin': pattern(2000) })
  const res = await app.inject({ url: '/data.bin', headers: { range: 'bytes=99999-' } })
  t.equal(res.statusCode, 416)
  t.equal(res.headers['content-range'], 'bytes */2000')
  t.equal(res.headers['content-digest'], sf(res.rawPayload))
  t.equal(res.headers['repr-digest'], sf(res.rawPayload))
})

test('304 from @fastify/static: no digests (nothing declared)', async (t) => {
  const { app } = await staticSite(t, { 'data.bin': pattern(2000) })
  const first = await app.inject('/data.bin')
  const res = await app.inject({ url: '/data.bin', headers: { 'if-none-match': first.headers.etag as string } })
  t.equal(res.statusCode, 304)
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.headers['repr-digest'], undefined)
})

test('a file rewritten between two requests gets a new digest, never a stale one', async (t) => {
  const { app, dir, disk, write } = await staticSite(t, { 'v.txt': 'version one, eleven' })
  const check = async (label: string): Promise<void> => {
    for (const [method, headers] of [['GET', { range: 'bytes=2-5' }], ['GET', {}], ['HEAD', {}]] as const) {
      const res = await app.inject({ method, url: '/v.txt', headers })
      t.equal(res.headers['repr-digest'], sf(disk('v.txt')), `${label}: ${method} ${JSON.stringify(headers)} Repr-Digest`)
      if (method === 'GET') t.equal(res.headers['content-digest'], sf(res.rawPayload), `${label}: Content-Digest`)
    }
  }
  const path = join(dir, 'v.txt')
  await check('first version')
  write('v.txt', 'version two is longer')
  await check('another size')
  const { mtime } = statSync(path)
  write('v.txt', 'version 3 is longer!!')
  utimesSync(path, mtime, new Date(mtime.getTime() + 5000))
  await check('same size, another mtime')
  const before = statSync(path)
  writeFileSync(join(dir, 'tmp'), 'version 4 is longer!!')
  renameSync(join(dir, 'tmp'), path)
  utimesSync(path, before.atime, before.mtime)
  t.equal(statSync(path).mtimeMs, before.mtimeMs, 'same size and mtime')
  t.not(statSync(path).ino, before.ino, 'another inode')
  await check('same size and mtime, another inode')
})

test('a file rewritten in place with the same size and mtime (a reproducible build copied with cp -p) gets a new digest', async (t) => {
  const FIXED = new Date('1980-01-01T00:00:00Z')
  for (const order of [undefined, 'compress-first', 'digest-first'] as const) {
    const { app, dir, disk, write } = await staticSite(t, { 'app.js': 'console.log("v1.0.1")\n' }, { compress: order })
    const path = join(dir, 'app.js')
    utimesSync(path, FIXED, FIXED)
    const check = async (label: string): Promise<void> => {
      const cases: Array<['GET' | 'HEAD', Record<string, string>]> = [
        ['GET', {}], ['GET', { 'accept-encoding': 'gzip' }], ['GET', { range: 'bytes=2-9' }], ['HEAD', {}], ['HEAD', { range: 'bytes=2-9' }]
      ]
      for (const [method, headers] of cases) {
        const res = await app.inject({ method, url: '/app.js', headers })
        const name = `${order ?? 'no compress'} ${label}: ${method} ${JSON.stringify(headers)}`
        t.equal(res.headers['repr-digest'], sf(disk('app.js')), `${name}: Repr-Digest`)
        if (method === 'GET') t.equal(res.headers['content-digest'], sf(res.rawPayload), `${name}: Content-Digest`)
      }
    }
    await check('v1.0.1')
    const before = statSync(path)
    // Past one tick of a coarse file-system clock, so the kernel gives the write another ctime.
    await new Promise((resolve) => setTimeout(resolve, 20))
    writeFileSync(path, 'console.log("v1.0.2")\n', { flag: 'r+' })
    utimesSync(path, FIXED, FIXED)
    const after = statSync(path)
    t.same([after.ino, after.size, after.mtimeMs], [before.ino, before.size, before.mtimeMs], 'same inode, size and mtime')
    t.not(after.ctimeMs, before.ctimeMs, 'another ctime')
    await check('v1.0.2')
    write('app.js', 'console.log("v1.0.3")\n')
  }
})

test('a file that changes while it is being served: digests omitted, not stale', async (t) => {
  const { app, disk, logs } = await staticSite(t, { 'big.bin': pattern(50000), 'small.bin': pattern(100) }, {
    digest: { contentDigest: true, reprDigest: true, maxBufferSize: 1000 },
    logLevel: 'debug',
    static: {
      // Rewrite the file after @fastify/send took its stat.
      setHeaders (reply: FastifyReply, path: string, stat: Stats) {
        staticHeaders(reply, path, stat)
        writeFileSync(path, pattern(stat.size + 10).reverse())
      }
    }
  })
  const part = await app.inject({ url: '/big.bin', headers: { range: 'bytes=0-20000' } })
  t.equal(part.statusCode, 206)
  t.equal(part.headers['repr-digest'], undefined, 'the whole file moved: no Repr-Digest')
  t.equal(part.headers['content-digest'], undefined, 'nor a Content-Digest read from another version')
  t.ok(logs.some((l) => l.includes('file changed while hashing the range')))
  const whole = await app.inject('/small.bin')
  t.equal(whole.statusCode, 200)
  t.equal(whole.headers['repr-digest'], undefined)
  t.equal(whole.headers['content-digest'], sf(whole.rawPayload), 'the bytes sent, hashed as they flowed')
  t.not(whole.headers['content-digest'], sf(disk('small.bin')))
})

for (const order of ['compress-first', 'digest-first'] as const) {
  test(`with @fastify/compress, ${order}`, async (t) => {
    const text = Buffer.from('static and compressible\n'.repeat(2000)) // 48 kB
    for (const strict of [false, true]) {
      const { app, disk, logs } = await staticSite(t, { 'a.txt': text }, {
        digest: { strict, contentDigest: true, reprDigest: true, maxBufferSize: 100000 },
        compress: order,
        logLevel: 'debug'
      })
      const file = disk('a.txt')
      const label = `${order} strict=${strict}`
      const gzip = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip' } })
      t.equal(gzip.headers['content-encoding'], 'gzip', label)
      t.equal(gzip.headers['content-digest'], sf(gzip.rawPayload), `${label}: Content-Digest of the gzip bytes`)
      t.equal(gzip.headers['repr-digest'], strict ? sf(gzip.rawPayload) : sf(file), `${label}: Repr-Digest`)
      const te = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip', te: 'trailers' } })
      t.equal(te.trailers['content-digest'], sf(te.rawPayload), `${label} te: Content-Digest trailer`)
      t.equal(fields(te)['repr-digest'], strict ? sf(te.rawPayload) : sf(file), `${label} te: Repr-Digest`)
      t.equal(te.headers['repr-digest'], strict ? undefined : sf(file), `${label} te: the file's Repr-Digest is known upfront`)
      const part = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip', range: 'bytes=10-99' } })
      t.equal(part.statusCode, 206)
      t.equal(part.headers['content-digest'], sf(part.rawPayload), `${label}: Content-Digest of the part's bytes sent`)
      if (COMPRESS_MAJOR >= 9) {
        t.equal(part.headers['content-encoding'], undefined, `${label}: compress never touches a 206`)
        t.equal(part.headers['content-digest'], sf(file.subarray(10, 100)))
        t.equal(part.headers['repr-digest'], sf(file))
      } else {
        // @fastify/compress 8 gzips the part itself: no range of any
        // representation, so strict mode (Repr-Digest of the selected
        // representation) has none to give; the default still names the file.
        t.equal(part.headers['content-encoding'], 'gzip', `${label}: compress 8 gzips a 206`)
        t.equal(part.headers['repr-digest'], strict ? undefined : sf(file), `${label}: Repr-Digest of a gzipped part`)
      }
      const head = await app.inject({ method: 'HEAD', url: '/a.txt', headers: { 'accept-encoding': 'gzip' } })
      t.equal(head.headers['content-encoding'], 'gzip', `${label}: @fastify/static's HEAD route is compressed`)
      t.equal(head.headers['content-digest'], EMPTY_SHA256)
      t.equal(head.headers['repr-digest'], strict ? undefined : sf(file), `${label}: HEAD Repr-Digest (strict: the gzip representation was never seen)`)
      const stale = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip', 'repr-digest': strict ? sf(file) : STALE } })
      t.equal(stale.statusCode, 406, `${label}: 406 for another representation`)
      t.equal(stale.headers['repr-digest'], strict ? sf(gzip.rawPayload) : sf(file))
      const current = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip', 'repr-digest': strict ? sf(gzip.rawPayload) : sf(file), te: 'trailers' } })
      t.equal(current.statusCode, 200, `${label}: the current representation`)
      t.equal(fields(current)['content-digest'], sf(current.rawPayload))
      t.notOk(logs.some((l) => l.includes('digests omitted')), label)
    }
  })
}

test('with @fastify/compress: a coded file over maxBufferSize without trailers', async (t) => {
  const text = Buffer.from('static and compressible\n'.repeat(20000))
  for (const strict of [false, true]) {
    const digest = { strict, contentDigest: true, reprDigest: true, maxBufferSize: 100 }
    const { app, disk } = await staticSite(t, { 'a.txt': text }, { digest, compress: 'compress-first' })
    const res = await app.inject({ url: '/a.txt', headers: { 'accept-encoding': 'gzip' } })
    t.equal(res.headers['content-encoding'], 'gzip')
    t.equal(res.headers['content-digest'], undefined, 'the gzip bytes are known too late')
    t.equal(res.headers['repr-digest'], strict ? undefined : sf(disk('a.txt')), `strict=${strict}: the file's digest does not depend on the coding`)
  }
})

test('HEAD with @fastify/compress and without staticHeaders: never the digest of the empty HEAD stream', async (t) => {
  const files = { 'a.txt': 'head me '.repeat(500) }
  const { app } = await staticSite(t, files, { compress: 'compress-first', headers: false })
  const head = await app.inject({ method: 'HEAD', url: '/a.txt', headers: { 'accept-encoding': 'gzip' } })
  t.equal(head.headers['content-encoding'], 'gzip')
  t.equal(head.headers['content-digest'], EMPTY_SHA256)
  t.equal(head.headers['repr-digest'], undefined, 'unknown: omitted')
})

test('the 406 rule with a 206: the current file\'s digest gets the part, a stale one gets 406', async (t) => {
  for (const strict of [false, true]) {
    const { app, disk } = await staticSite(t, { 'data.bin': pattern(4000) }, { digest: { strict } })
    const file = disk('data.bin')
    const ok = await app.inject({ url: '/data.bin', headers: { range: 'bytes=100-199', 'repr-digest': sf(file) } })
    t.equal(ok.statusCode, 206, `strict=${strict}`)
    t.ok(ok.rawPayload.equals(file.subarray(100, 200)))
    const also = await app.inject({ url: '/data.bin', headers: { range: 'bytes=100-199', 'repr-digest': sf(file, 'sha-512') } })
    t.equal(also.statusCode, 206, 'any enabled algorithm')
    const no = await app.inject({ url: '/data.bin', headers: { range: 'bytes=100-199', 'repr-digest': STALE } })
    t.equal(no.statusCode, 406)
    t.equal(no.headers['content-type'], 'application/problem+json')
    t.equal(no.json().code, 'FST_DIGEST_STALE_REPRESENTATION', 'the problem details')
    t.equal(no.headers['content-length'], String(no.rawPayload.byteLength))
    t.equal(no.headers['content-range'], undefined)
    t.equal(no.headers['repr-digest'], sf(file))
    const full = await app.inject({ url: '/data.bin', headers: { 'repr-digest': STALE } })
    t.equal(full.statusCode, 406, 'a 200 too')
    t.equal(full.headers['repr-digest'], sf(file))
    const fullOk = await app.inject({ url: '/data.bin', headers: { 'repr-digest': sf(file) } })
    t.equal(fullOk.statusCode, 200)
    t.ok(fullOk.rawPayload.equals(file))
  }
})

test('Repr-Digest alone: a large part is neither buffered nor hashed', async (t) => {
  const digest = { reprDigest: true, maxBufferSize: 10 }
  const { app, disk } = await staticSite(t, { 'big.bin': pattern(100000) }, { digest })
  const res = await app.inject({ url: '/big.bin', headers: { range: 'bytes=0-50000' } })
  t.equal(res.statusCode, 206)
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.headers['repr-digest'], sf(disk('big.bin')))
  t.equal(res.headers['content-length'], '50001')
})

test('a route that sends its own 206 from a file stream: no Repr-Digest unless declared', async (t) => {
  const { app, dir, disk } = await staticSite(t, { 'data.bin': pattern(1000) })
  app.get('/own', async (_req, reply) => {
    const stream = createReadStream(join(dir, 'data.bin'), { start: 10, end: 19 })
    return reply.code(206).header('content-range', 'bytes 10-19/1000').type('application/octet-stream').send(stream)
  })
  const res = await app.inject('/own')
  t.equal(res.statusCode, 206)
  t.ok(res.rawPayload.equals(disk('data.bin').subarray(10, 20)))
  t.equal(res.headers['content-digest'], sf(res.rawPayload))
  t.equal(res.headers['repr-digest'], undefined, 'never computed over the part')
})

test('fileCacheSize: 0 keeps nothing and stays correct; each field its own algorithm', async (t) => {
  const { app, disk, write } = await staticSite(t, { 'data.bin': pattern(3000) }, {
    digest: { fileCacheSize: 0, contentDigest: 'sha-512', reprDigest: 'sha-256' }
  })
  for (const content of [pattern(3000), pattern(2000)]) {
    write('data.bin', content)
    for (const headers of [{}, { range: 'bytes=7-700' }]) {
      const res = await app.inject({ url: '/data.bin', headers })
      t.equal(res.headers['content-digest'], sf(res.rawPayload, 'sha-512'), JSON.stringify(headers))
      t.equal(res.headers['repr-digest'], sf(disk('data.bin')), JSON.stringify(headers))
    }
    const head = await app.inject({ method: 'HEAD', url: '/data.bin' })
    t.equal(head.headers['repr-digest'], sf(disk('data.bin')))
  }
})
