// The whole-file digest cache over real files (lib/core/file-cache.ts, its
// sidecars), and which @fastify/static responses stand for a
// file (lib/plugin/response/static-files.ts), over the real @fastify/static.
import { test } from 'tap'
import { renameSync, statSync, truncateSync, unlinkSync, writeFileSync, type Stats } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createHash } from 'node:crypto'
import fastifyStatic from '@fastify/static'
import type { FastifyReply, onSendHookHandler } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import { FileDigestCache, hashFile, readSidecars, type StaticFile } from '../../../lib/core/file-cache'
import type { DigestResults } from '../../../lib/core/digest-stream'
import { identityFile } from '../../../lib/plugin/response/static-files'
import { normalizeOptions } from '../../../lib/plugin/plugin-options'
import { CheckedStream } from '../../../lib/core/digest-stream'
import digestFields = require('../../../lib/index')
import { buildApp, sf, pattern } from '../../helpers'
import { countHashing } from '../hardening-helpers'

interface Closeable { teardown (fn: () => unknown): void }

async function tempDir (t: Closeable): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-files-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function tempFile (t: Closeable, content: Buffer | string, name = 'f.bin'): Promise<StaticFile> {
  const path = join(await tempDir(t), name)
  await writeFile(path, content)
  return { path, stat: statSync(path) }
}

function field (digests: Map<DigestAlgorithm, Buffer> | null, alg: DigestAlgorithm = 'sha-256'): string | undefined {
  const v = digests?.get(alg)
  return v === undefined ? undefined : `${alg}=:${v.toString('base64')}:`
}

test('hashFile: whole files and ranges, streamed', async (t) => {
  const bytes = pattern(600 * 1024) // more than one read
  const file = await tempFile(t, bytes)
  const whole = await hashFile(file, ['sha-256', 'sha-512'])
  t.equal(field(whole), sf(bytes))
  t.equal(field(whole, 'sha-512'), sf(bytes, 'sha-512'))
  const range = await hashFile(file, ['sha-256'], { start: 1000, end: 400000 })
  t.equal(field(range), sf(bytes.subarray(1000, 400001)))
  const one = await hashFile(file, ['sha-256'], { start: 5, end: 5 })
  t.equal(field(one), sf(bytes.subarray(5, 6)))
  const empty = await tempFile(t, '')
  t.equal(field(await hashFile(empty, ['sha-256'])), sf(''), 'an empty file')
})

test('hashFile: null whenever the bytes may not be that version of the file', async (t) => {
  const file = await tempFile(t, 'version one')
  t.equal(await hashFile({ path: file.path + '.missing', stat: file.stat }, ['sha-256']), null, 'cannot open')
  t.equal(await hashFile({ path: file.path, stat: { ...file.stat, size: 3 } }, ['sha-256']), null, 'stat differs before reading')
  t.equal(await hashFile({ path: file.path, stat: { ...file.stat, mtimeMs: file.stat.mtimeMs + 1 } }, ['sha-256']), null, 'mtime differs')
  t.equal(await hashFile({ path: file.path, stat: { ...file.stat, ctimeMs: file.stat.ctimeMs - 1 } }, ['sha-256']), null, 'ctime differs')
  t.equal(await hashFile({ path: file.path, stat: { ...file.stat, ino: file.stat.ino + 1 } }, ['sha-256']), null, 'inode differs')
  t.equal(await hashFile({ path: file.path, stat: { ...file.stat, dev: file.stat.dev + 1 } }, ['sha-256']), null, 'device differs')

  // Shorter than its stat says (truncated after it was taken), and a directory (EISDIR on read).
  const long = await tempFile(t, 'a longer version')
  truncateSync(long.path, 3)
  t.equal(await hashFile(long, ['sha-256']), null, 'ends before its stat\'s size')
  const dir = await tempDir(t)
  t.equal(await hashFile({ path: dir, stat: statSync(dir) }, ['sha-256']), null, 'a directory cannot be read')
})

/** fileHashing: 'wait', no sidecars. */
const WAIT = { background: false, sidecars: false } as const

test('FileDigestCache: one pass per file version, shared by concurrent requests, merged per algorithm', async (t) => {
  const file = await tempFile(t, 'shared pass')
  const cache = new FileDigestCache(10, WAIT)
  const all = Promise.all([
    cache.digests(file, ['sha-256']),
    cache.digests(file, ['sha-256']),
    cache.digests(file, ['sha-256', 'sha-512']),
    cache.digests(file, ['sha-512'])
  ])
  const [a, b, c, d] = await all
  for (const r of [a, b, c]) t.equal(field(r), sf('shared pass'))
  t.equal(field(c, 'sha-512'), sf('shared pass', 'sha-512'))
  t.equal(field(d, 'sha-512'), sf('shared pass', 'sha-512'))
  // Cached: found though the file is gone.
  unlinkSync(file.path)
  t.equal(field(await cache.digests(file, ['sha-256', 'sha-512'])), sf('shared pass'), 'then served from the cache')
  t.equal(await cache.digests(file, ['md5']), null, 'an algorithm not cached is hashed, and the file is gone')
  t.same(await cache.digests(file, []), new Map(), 'no algorithms, nothing to do')
})

test('FileDigestCache: never stale, and bounded', async (t) => {
  const dir = await tempDir(t)
  const path = join(dir, 'v.txt')
  await writeFile(path, 'first version')
  const v1 = { path, stat: statSync(path) }
  const cache = new FileDigestCache(2, WAIT)
  t.equal(field(await cache.digests(v1, ['sha-256'])), sf('first version'))
  await writeFile(path, 'second version, longer')
  const v2 = { path, stat: statSync(path) }
  t.equal(field(await cache.digests(v1, ['sha-256'])), sf('first version'), 'the old version, cached')
  t.equal(await new FileDigestCache(2, WAIT).digests(v1, ['sha-256']), null, 'the old version can no longer be hashed')
  t.equal(field(await cache.digests(v2, ['sha-256'])), sf('second version, longer'), 'a new stat is a new version')
  t.equal(await cache.digests(v1, ['sha-256']), null, 'the new version replaced the old one (one entry per path)')

  // Cached or not, seen once the files are gone (hashing them fails).
  const files: StaticFile[] = []
  for (const name of ['a', 'b', 'c']) {
    const p = join(dir, name)
    await writeFile(p, name)
    files.push({ path: p, stat: statSync(p) })
  }
  const [a, b, c] = files as [StaticFile, StaticFile, StaticFile]
  const cached = async (f: StaticFile): Promise<boolean> => (await cache.digests(f, ['sha-256'])) !== null
  await cache.digests(a, ['sha-256'])
  await cache.digests(b, ['sha-256'])
  for (const f of files) unlinkSync(f.path)
  t.ok(await cached(a), 'a is now the most recently used')
  await writeFile(c.path, 'c')
  const c2 = { path: c.path, stat: statSync(c.path) }
  await cache.digests(c2, ['sha-256'])
  unlinkSync(c.path)
  t.notOk(await cached(b), 'the least recently used went out: the bound holds')
  t.ok(await cached(a))
  t.ok(await cached(c2))
  cache.drop(c2.path)
  t.notOk(await cached(c2), 'dropped: the bytes sent did not match')

  const none = new FileDigestCache(0, WAIT)
  await writeFile(a.path, 'a')
  const a2 = { path: a.path, stat: statSync(a.path) }
  t.equal(field(await none.digests(a2, ['sha-256'])), sf('a'), 'fileCacheSize 0 still answers')
  unlinkSync(a.path)
  t.equal(await none.digests(a2, ['sha-256']), null, 'and keeps nothing')
})

test('FileDigestCache with sidecars: used at once, checked by a background pass, replaced when wrong', async (t) => {
  const dir = await tempDir(t)
  const sidecar = (name: string, content: string): Promise<void> => writeFile(join(dir, `${name}.sha256`), `${createHash('sha256').update(content).digest('hex')}  ${name}\n`)
  const make = async (name: string, content: string, claimed: string): Promise<StaticFile> => {
    await writeFile(join(dir, name), content)
    await sidecar(name, claimed)
    return { path: join(dir, name), stat: statSync(join(dir, name)) }
  }
  const right = await make('right.js', 'right', 'right')
  const wrong = await make('wrong.js', 'wrong', 'a lie')
  const told: string[] = []
  const cache = new FileDigestCache(10, { background: false, sidecars: true, wrongSidecar: (path) => told.push(path) })
  t.equal(field(await cache.digests(right, ['sha-256'])), sf('right'), 'from the sidecar, while its check waits')
  t.equal(field(await cache.digests(wrong, ['sha-256'])), sf('a lie'), 'a wrong sidecar is served until checked (HEAD and 206 only: a GET is checked as it is sent)')
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(told, [wrong.path], 'the wrong one is reported')
  t.equal(field(await cache.digests(wrong, ['sha-256'])), sf('wrong'), 'and replaced by the file\'s own digest')
  t.equal(field(await cache.digests(right, ['sha-256'])), sf('right'))
  cache.drop(wrong.path)
  t.equal(field(await cache.digests(wrong, ['sha-256'])), sf('wrong'), 'that version\'s sidecar is not read again')

  // A check that cannot read the file to the end (rewritten meanwhile): its claim is dropped.
  const moving = await make('moving.js', 'moving', 'moving')
  const rewriting = new FileDigestCache(10, { background: false, sidecars: true })
  t.equal(field(await rewriting.digests(moving, ['sha-256'])), sf('moving'))
  // Before the check's first read: only microtasks ran since it started.
  writeFileSync(moving.path, 'moved')
  await new Promise((resolve) => setTimeout(resolve, 50))
  unlinkSync(`${moving.path}.sha256`)
  t.equal(await rewriting.digests(moving, ['sha-256']), null, 'unchecked: dropped (and that version cannot be hashed)')

  // Without a callback, a wrong sidecar is still replaced.
  const quiet = new FileDigestCache(10, { background: false, sidecars: true })
  t.equal(field(await quiet.digests(wrong, ['sha-256'])), sf('a lie'))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(field(await quiet.digests(wrong, ['sha-256'])), sf('wrong'))
  t.equal(await readSidecars(right.path, right.stat.ctimeMs, ['md5']), null, 'no sidecar for other algorithms')
  t.equal(await readSidecars(right.path, right.stat.ctimeMs + 60000, ['sha-256']), null, 'older than the file')
})

test('CheckedStream: the last chunk is held back until the bytes match the digests expected', async (t) => {
  const sha256 = (data: string): Buffer => createHash('sha256').update(data).digest()
  const run = async (chunks: string[], expected: Array<[DigestAlgorithm, Buffer]>): Promise<{ out: string, err: unknown, failed: DigestAlgorithm[] }> => {
    const failed: DigestAlgorithm[] = []
    const check = new CheckedStream(['sha-256'], (algorithm) => {
      failed.push(algorithm)
      return new Error('mismatch')
    })
    for (const [a, v] of expected) check.expected.set(a, v)
    let out = ''
    const sink = new Writable({ write (chunk, _encoding, callback) { out += String(chunk); callback() } })
    const err = await pipeline(Readable.from(chunks.map((c) => Buffer.from(c))), check, sink).then(() => null, (e: unknown) => e)
    return { out, err, failed }
  }
  t.same(await run(['ab', 'cd', 'ef'], [['sha-256', sha256('abcdef')]]), { out: 'abcdef', err: null, failed: [] }, 'a match: every byte, a clean end')
  t.same(await run(['ab', 'cd', 'ef'], []), { out: 'abcdef', err: null, failed: [] }, 'nothing expected')
  t.same(await run([], [['sha-256', sha256('')]]), { out: '', err: null, failed: [] }, 'no bytes')
  t.match(await run(['ab', 'cd', 'ef'], [['sha-256', sha256('abcdeF')]]), { out: 'abcd', err: { message: 'mismatch' }, failed: ['sha-256'] }, 'a mismatch: the last chunk never goes out')
  t.match(await run(['ab'], [['sha-512', sha256('ab')]]), { out: '', err: { message: 'mismatch' }, failed: ['sha-512'] }, 'an algorithm not hashed cannot be vouched for')
})

test('FileDigestCache with verified sidecars: the file is hashed first; a confirmed sidecar is read again without a pass', async (t) => {
  const dir = await tempDir(t)
  const make = async (name: string, content: string, claimed: string): Promise<StaticFile> => {
    await writeFile(join(dir, name), content)
    await writeFile(join(dir, `${name}.sha256`), `${createHash('sha256').update(claimed).digest('hex')}  ${name}\n`)
    return { path: join(dir, name), stat: statSync(join(dir, name)) }
  }
  const a = await make('a.js', 'a', 'a')
  const b = await make('b.js', 'b', 'b')
  const w = await make('w.js', 'w', 'a lie')
  const told: string[] = []
  const cache = new FileDigestCache(1, { background: false, sidecars: 'verified', wrongSidecar: (path) => told.push(path) })
  const count = countHashing()
  t.teardown(() => count.restore())
  /** The digests of `file`, and the hash passes the cache made for them. */
  const counted = async (file: StaticFile): Promise<[DigestResults | null, number]> => {
    count.reset()
    const digests = await cache.digests(file, ['sha-256'])
    return [digests, count.passes.get('sha-256') ?? 0]
  }
  const [first, firstPasses] = await counted(a)
  t.equal(field(first), sf('a'), 'the first request waits for the pass')
  t.equal(firstPasses, 1, 'one pass')
  t.equal(field(await cache.digests(b, ['sha-256'])), sf('b'), 'the cache holds one file: a is out')
  const [again, againPasses] = await counted(a)
  t.equal(field(again), sf('a'), 'a again: its confirmed sidecar')
  t.equal(againPasses, 0, 'without a pass')
  t.equal(field(await cache.digests(w, ['sha-256'])), sf('w'), 'a wrong sidecar never answers')
  t.same(told, [w.path], 'and is reported')
})

test('the fileCacheSize, fileHashing and fileSidecars options', async (t) => {
  t.equal(normalizeOptions().fileCacheSize, 1000)
  t.equal(normalizeOptions({ fileCacheSize: 0 }).fileCacheSize, 0)
  for (const bad of [-1, 1.5, '10', null]) {
    t.throws(() => normalizeOptions({ fileCacheSize: bad as never }), {
      code: 'FST_DIGEST_INVALID_OPTION', message: /"fileCacheSize": expected a non-negative integer number of files/
    })
  }
  t.match(normalizeOptions({ fileHashing: 'background', fileSidecars: true }), { fileHashing: 'background', fileSidecars: true })
  t.match(normalizeOptions({ fileHashing: 'wait', fileSidecars: false }), { fileHashing: 'wait', fileSidecars: false })
  for (const bad of ['Background', true, null, 'later']) {
    t.throws(() => normalizeOptions({ fileHashing: bad as never }), {
      code: 'FST_DIGEST_INVALID_OPTION', message: /"fileHashing": expected 'wait' or 'background', got /
    })
  }
  t.match(normalizeOptions({ fileSidecars: 'verified' }), { fileSidecars: 'verified' })
  t.throws(() => normalizeOptions({ fileSidecars: 'yes' as never }), { message: /"fileSidecars": expected true, false or 'verified', got "yes"/ })
  t.throws(() => normalizeOptions({ fileCacheSize: 0, fileSidecars: 'verified' }), { message: /"fileSidecars": needs the file cache/ })
  t.throws(() => normalizeOptions({ fileCacheSize: 0, fileHashing: 'background' }), { message: /"fileHashing": needs the file cache \(fileCacheSize above 0\)/ })
  t.throws(() => normalizeOptions({ fileCacheSize: 0, fileSidecars: true }), { message: /"fileSidecars": needs the file cache/ })
})

test('identityFile: the original next to a pre-compressed file', async (t) => {
  const dir = await tempDir(t)
  await writeFile(join(dir, 'a.js'), 'original')
  await writeFile(join(dir, 'a.js.br'), 'coded')
  await writeFile(join(dir, 'lone.js.gz'), 'coded')
  const br = { path: join(dir, 'a.js.br'), stat: statSync(join(dir, 'a.js.br')) }
  const original = await identityFile(br, 'br')
  t.equal(original?.path, join(dir, 'a.js'))
  t.equal(original?.stat.size, 8)
  t.equal(await identityFile(br, undefined), br, 'no coding: the file itself')
  t.equal(await identityFile(br, 'gzip'), br, 'a coding its name does not carry: the file itself')
  t.equal(await identityFile(br, 'x-custom'), br)
  t.equal(await identityFile(br, ['br']), br)
  const lone = { path: join(dir, 'lone.js.gz'), stat: statSync(join(dir, 'lone.js.gz')) }
  t.equal(await identityFile(lone, 'gzip'), null, 'no original on disk')
})

/** @fastify/static over one file, with an application's setHeaders around staticHeaders. */
async function site (t: Closeable, setHeaders: (reply: FastifyReply, path: string, stat: Stats) => void, hook?: onSendHookHandler) {
  const dir = await tempDir(t)
  writeFileSync(join(dir, 'f.bin'), pattern(3000))
  const app = await buildApp(t, { contentDigest: true, reprDigest: true }, {}, async (app) => {
    // An onSend hook of the application's, before the route's.
    if (hook !== undefined) app.addHook('onSend', hook)
  })
  await app.register(fastifyStatic, { root: dir, setHeaders: setHeaders as never })
  return { app, path: join(dir, 'f.bin') }
}

test('which responses stand for the file staticHeaders recorded', async (t) => {
  const { staticHeaders } = digestFields
  const whole = pattern(3000)
  // The file replaced after @fastify/send took its stat (a deploy): the stream reads the new one.
  const replaced = await site(t, (reply, path, stat) => {
    staticHeaders(reply, path, stat)
    writeFileSync(`${path}.new`, Buffer.from(whole).reverse())
    renameSync(`${path}.new`, path)
  })
  const res = await replaced.app.inject('/f.bin')
  t.equal(res.headers['content-digest'], sf(res.rawPayload), 'hashed as it flowed')
  t.equal(res.headers['content-digest'], sf(Buffer.from(whole).reverse()), 'the new version')
  // A record naming another file.
  const other = await site(t, (reply, path, stat) => { staticHeaders(reply, `${path}.other`, stat) })
  const part = await other.app.inject({ url: '/f.bin', headers: { range: 'bytes=0-9' } })
  t.equal(part.headers['content-digest'], sf(whole.subarray(0, 10)))
  t.equal(part.headers['repr-digest'], undefined, 'no whole-file digest')
  // A stream already open when the plugin sees it: which version it reads is unknown.
  const open = await site(t, staticHeaders, async () => { await new Promise((resolve) => setTimeout(resolve, 20)) })
  const late = await open.app.inject('/f.bin')
  t.equal(late.headers['content-digest'], sf(whole), 'hashed as it flowed')
  const latePart = await open.app.inject({ url: '/f.bin', headers: { range: 'bytes=0-9' } })
  t.equal(latePart.headers['repr-digest'], undefined, 'no whole-file digest for its part')
  // A record whose size is not the Content-Length or Content-Range @fastify/send set.
  const sized = await site(t, (reply, path, stat) => { staticHeaders(reply, path, { ...stat, size: stat.size + 1 } as Stats) })
  t.equal((await sized.app.inject({ url: '/f.bin', headers: { range: 'bytes=0-9' } })).headers['repr-digest'], undefined, 'another size: not that file')
  t.equal((await sized.app.inject('/f.bin')).headers['content-digest'], sf(whole), 'hashed as it flowed')
  // A 206 whose Content-Range is not @fastify/send's any more.
  const ranged = await site(t, staticHeaders, async (_request, reply) => { if (reply.statusCode === 206) reply.header('content-range', 'bytes 0-9/*') })
  const odd = await ranged.app.inject({ url: '/f.bin', headers: { range: 'bytes=0-9' } })
  t.equal(odd.headers['content-digest'], sf(whole.subarray(0, 10)))
  t.equal(odd.headers['repr-digest'], undefined, 'another Content-Range: not that file')
  // The file removed once described: a GET's stream fails to open, a HEAD's file cannot be hashed.
  const removed = await site(t, (reply, path, stat) => {
    staticHeaders(reply, path, stat)
    unlinkSync(path)
  })
  const head = await removed.app.inject({ method: 'HEAD', url: '/f.bin' })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['repr-digest'], undefined, 'HEAD: the file could not be hashed')
  writeFileSync(removed.path, whole)
  const gone = await removed.app.inject('/f.bin')
  t.equal(gone.statusCode, 500, 'GET: fastify\'s error for the stream')
  t.equal(gone.headers['content-digest'], sf(gone.rawPayload), 'with the digests of that error')
})
