// The whole-file digest cache and the recognition of @fastify/static
// responses, without a server: hashing passes counted, stats forged,
// requests and replies reduced to what lib/plugin/response/static-files.ts reads.
import { test } from 'tap'
import { createReadStream, statSync } from 'node:fs'
import { mkdtemp, rm, writeFile, type FileHandle } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { DigestAlgorithm } from '../../../types/index'
import { FileDigestCache, hashFile, parseContentRange, sendEtag, type ByteRange, type HashFile, type StaticFile } from '../../../lib/core/file-cache'
import { identityFile, resolveFileResponse, staticHeaders } from '../../../lib/plugin/response/static-files'
import { normalizeOptions } from '../../../lib/plugin/options'
import { CheckedStream } from '../../../lib/core/digest-stream'
import { readSidecars } from '../../../lib/core/sidecars'
import { sf, pattern } from '../../helpers'

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

  // A descriptor whose stat changes while it is read (a write under way),
  // one that is shorter than its stat, and one that fails to read.
  let closed = 0
  function fake (stats: StaticFile['stat'][], read: (buf: Buffer) => Promise<{ bytesRead: number }>): (path: string) => Promise<FileHandle> {
    return async () => ({
      stat: async () => stats.shift(),
      read: async (buf: Buffer) => await read(buf),
      close: async () => { closed++ }
    }) as unknown as FileHandle
  }
  const s = file.stat
  const fill = async (buf: Buffer): Promise<{ bytesRead: number }> => ({ bytesRead: buf.length })
  const grown = { ...s, size: s.size + 1 }
  t.equal(await hashFile(file, ['sha-256'], null, fake([s, grown], fill)), null, 're-stat after hashing differs')
  t.equal(await hashFile(file, ['sha-256'], null, fake([s, s], async () => ({ bytesRead: 0 }))), null, 'end of file too early')
  t.equal(await hashFile(file, ['sha-256'], null, fake([s, s], async () => { throw new Error('EIO') })), null, 'read error')
  t.ok(await hashFile(file, ['sha-256'], null, fake([s, s], fill)), 'an unchanged stat keeps the digest')
  t.equal(closed, 4, 'every descriptor is closed')
})

function counting (): { hash: HashFile, calls: Array<readonly DigestAlgorithm[]>, release: () => void } {
  const calls: Array<readonly DigestAlgorithm[]> = []
  let gate: Promise<void> = Promise.resolve()
  let release = (): void => {}
  gate = new Promise((resolve) => { release = resolve })
  const hash: HashFile = async (file, algorithms, range) => {
    calls.push(algorithms)
    await gate
    return await hashFile(file, algorithms, range)
  }
  return { hash, calls, release }
}

test('FileDigestCache: one pass per file version, shared by concurrent requests, merged per algorithm', async (t) => {
  const file = await tempFile(t, 'shared pass')
  const { hash, calls, release } = counting()
  const cache = new FileDigestCache(10, { hash })
  const all = Promise.all([
    cache.digests(file, ['sha-256']),
    cache.digests(file, ['sha-256']),
    cache.digests(file, ['sha-256', 'sha-512']),
    cache.digests(file, ['sha-512'])
  ])
  release()
  const [a, b, c, d] = await all
  t.same(calls, [['sha-256'], ['sha-512']], 'one pass, plus one for the algorithm it lacked')
  for (const r of [a, b, c]) t.equal(field(r), sf('shared pass'))
  t.equal(field(c, 'sha-512'), sf('shared pass', 'sha-512'))
  t.equal(field(d, 'sha-512'), sf('shared pass', 'sha-512'))
  t.equal(field(await cache.digests(file, ['sha-256', 'sha-512'])), sf('shared pass'))
  t.equal(calls.length, 2, 'then served from the cache')
  t.equal(field(cache.cached(file, ['sha-512']), 'sha-512'), sf('shared pass', 'sha-512'))
  t.equal(cache.cached(file, ['md5']), null, 'cached() never computes')
  t.same(await cache.lookup(file, [], true), new Map(), 'no algorithms, nothing to do')
})

test('FileDigestCache: never stale, and bounded', async (t) => {
  const dir = await tempDir(t)
  const path = join(dir, 'v.txt')
  await writeFile(path, 'first version')
  const v1 = { path, stat: statSync(path) }
  const cache = new FileDigestCache(2)
  t.equal(field(await cache.digests(v1, ['sha-256'])), sf('first version'))
  await writeFile(path, 'second version, longer')
  const v2 = { path, stat: statSync(path) }
  t.equal(cache.cached(v2, ['sha-256']), null, 'a new stat is a miss')
  t.equal(await new FileDigestCache(2).digests(v1, ['sha-256']), null, 'the old version can no longer be hashed')
  t.equal(field(await cache.digests(v2, ['sha-256'])), sf('second version, longer'))
  t.equal(cache.cached(v1, ['sha-256']), null, 'the new version replaced the old one')
  t.equal(cache.size, 1, 'one entry per path')

  const files: StaticFile[] = []
  for (const name of ['a', 'b', 'c']) {
    const p = join(dir, name)
    await writeFile(p, name)
    files.push({ path: p, stat: statSync(p) })
  }
  const [a, b, c] = files as [StaticFile, StaticFile, StaticFile]
  await cache.digests(a, ['sha-256'])
  await cache.digests(b, ['sha-256'])
  t.equal(cache.size, 2)
  t.ok(cache.cached(a, ['sha-256']), 'a is now the most recently used')
  await cache.digests(c, ['sha-256'])
  t.equal(cache.size, 2, 'the bound holds')
  t.equal(cache.cached(b, ['sha-256']), null, 'the least recently used went out')
  t.ok(cache.cached(a, ['sha-256']))
  t.ok(cache.cached(c, ['sha-256']))

  cache.drop(c.path)
  t.equal(cache.cached(c, ['sha-256']), null, 'dropped: the bytes sent did not match')
  t.equal(cache.size, 1)

  const none = new FileDigestCache(0)
  t.equal(field(await none.digests(a, ['sha-256'])), sf('a'), 'fileCacheSize 0 still answers')
  t.equal(none.size, 0, 'and keeps nothing')
  none.remember('alias', a.path)
  t.equal(none.recall('alias'), null)
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
  const { hash, calls, release } = counting()
  const told: string[] = []
  const cache = new FileDigestCache(10, { sidecars: true, hash, wrongSidecar: (path) => told.push(path) })
  t.equal(field(await cache.digests(right, ['sha-256'])), sf('right'), 'from the sidecar, while its check waits')
  t.equal(field(await cache.digests(wrong, ['sha-256'])), sf('a lie'), 'a wrong sidecar is served until checked (HEAD and 206 only: a GET is checked as it is sent)')
  t.same(calls, [['sha-256'], ['sha-256']], 'one check each')
  release()
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(told, [wrong.path], 'the wrong one is reported')
  t.equal(field(cache.cached(wrong, ['sha-256'])), sf('wrong'), 'and replaced by the file\'s own digest')
  t.equal(field(cache.cached(right, ['sha-256'])), sf('right'))
  cache.drop(wrong.path)
  t.equal(field(await cache.digests(wrong, ['sha-256'])), sf('wrong'), 'that version\'s sidecar is not read again')
  t.equal(calls.length, 3)

  // A check that cannot read the file to the end (rewritten meanwhile): its claim is dropped.
  const moving = await make('moving.js', 'moving', 'moving')
  const rewriting = new FileDigestCache(10, {
    sidecars: true,
    hash: async (file, algorithms) => {
      await writeFile(file.path, 'moved')
      return await hashFile(file, algorithms)
    }
  })
  t.equal(field(await rewriting.digests(moving, ['sha-256'])), sf('moving'))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(rewriting.cached(moving, ['sha-256']), null, 'unchecked: dropped')

  // Without a callback, a wrong sidecar is still replaced.
  const quiet = new FileDigestCache(10, { sidecars: true })
  t.equal(field(await quiet.digests(wrong, ['sha-256'])), sf('a lie'))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(field(quiet.cached(wrong, ['sha-256'])), sf('wrong'))
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
  t.throws(() => normalizeOptions({ fileSidecars: 'yes' as never }), { message: /"fileSidecars": expected a boolean/ })
  t.throws(() => normalizeOptions({ fileCacheSize: 0, fileHashing: 'background' }), { message: /"fileHashing": needs the file cache \(fileCacheSize above 0\)/ })
  t.throws(() => normalizeOptions({ fileCacheSize: 0, fileSidecars: true }), { message: /"fileSidecars": needs the file cache/ })
})

test('parseContentRange, sendEtag', async (t) => {
  t.same(parseContentRange('bytes 10-18/19'), { start: 10, end: 18, total: 19 })
  for (const bad of [undefined, 5, 'bytes */19', 'bytes 1-2/*', 'items 1-2/3', 'bytes 1-2/3, bytes 4-5/6']) {
    t.equal(parseContentRange(bad), null, String(bad))
  }
  t.equal(sendEtag({ size: 19, mtime: new Date(1700000000123) }), `W/"13-${(1700000000123).toString(16)}"`)
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

// `raw`: where @fastify/static 8 and 9 have staticHeaders record the file.
interface FakeReply { statusCode: number, headers: Record<string, unknown>, getHeader (name: string): unknown, raw: object }

function fakeReply (statusCode: number, headers: Record<string, unknown>): FastifyReply {
  const reply: FakeReply = { statusCode, headers, getHeader: (name) => headers[name], raw: {} }
  return reply as unknown as FastifyReply
}

function fakeRequest (method: string, url = '/f.bin?x=1'): FastifyRequest {
  return { method, url, host: 'example.test' } as unknown as FastifyRequest
}

test('resolveFileResponse: what counts as a file response', async (t) => {
  const bytes = pattern(100)
  const file = await tempFile(t, bytes)
  const etag = sendEtag(statSync(file.path))
  const cache = new FileDigestCache(10)
  const open = (range?: ByteRange): Readable => {
    const s = createReadStream(file.path, range)
    t.teardown(() => s.destroy())
    return s
  }
  const get = async (status: number, headers: Record<string, unknown>, payload: unknown, record = false): Promise<unknown> => {
    const reply = fakeReply(status, headers)
    if (record) staticHeaders(reply, file.path, statSync(file.path))
    return await resolveFileResponse(fakeRequest('GET'), reply, payload, cache)
  }
  const whole = open({ start: 0, end: 99 })
  t.match(await get(200, { etag }, whole), { path: file.path, range: null, stream: whole, cachedOnly: false }, 'a 200 found by its ETag')
  t.match(await get(200, {}, open({ start: 0, end: 99 }), true), { path: file.path }, 'a 200 recorded by staticHeaders')
  t.match(await get(206, { etag, 'content-range': 'bytes 10-19/100' }, open({ start: 10, end: 19 })), { range: { start: 10, end: 19 } })
  t.equal(await get(200, { etag }, Readable.from(['x'])), null, 'not a file stream')
  t.equal(await get(200, {}, open({ start: 0, end: 99 })), null, 'no ETag, no record')
  t.equal(await get(200, { etag: 'W/"other"' }, open({ start: 0, end: 99 })), null, 'another ETag')
  t.equal(await get(200, { etag }, open()), null, 'an open-ended stream is not the file as @fastify/send sends it')
  t.equal(await get(200, { etag }, open({ start: 1, end: 99 })), null, 'not the whole file')
  t.equal(await get(206, { etag, 'content-range': 'bytes 10-19/100' }, open({ start: 10, end: 20 })), null, 'not the announced part')
  t.equal(await get(206, { etag, 'content-range': 'bytes 10-19/101' }, open({ start: 10, end: 19 })), null, 'another total length')
  t.equal(await get(206, { etag, 'content-range': 'bytes 10-19/100' }, open({ start: 9, end: 19 })), null)
  t.equal(await get(206, { etag }, open({ start: 10, end: 19 })), null, 'no Content-Range')
  const other = fakeReply(200, {})
  staticHeaders(other, file.path + '.other', statSync(file.path))
  t.equal(await resolveFileResponse(fakeRequest('GET'), other, open({ start: 0, end: 99 }), cache), null, 'the record names another file')
  const gone = createReadStream(join(file.path, '..', 'gone'), { start: 0, end: 99 })
  gone.on('error', () => {})
  t.equal(await get(200, { etag }, gone), null, 'a file that is gone')

  // HEAD: a record, or the alias an earlier response with the same URL and ETag left.
  const head = async (headers: Record<string, unknown>, record = false, url?: string): Promise<unknown> => {
    const reply = fakeReply(200, headers)
    if (record) staticHeaders(reply, file.path, statSync(file.path))
    return await resolveFileResponse(fakeRequest('HEAD', url), reply, Readable.from([]), cache)
  }
  t.match(await head({}, true), { path: file.path, stream: null, cachedOnly: false })
  t.match(await head({ etag }), { path: file.path, cachedOnly: true }, 'the alias of the GETs above')
  t.equal(await head({ etag }, false, '/elsewhere'), null, 'another URL')
  t.equal(await head({ etag, 'content-encoding': 'br' }), null, 'another coding')
  t.equal(await head({}), null, 'no ETag')
  t.equal(await head({ etag: 'W/"1-1"' }), null, 'an ETag never seen')
  await writeFile(file.path, 'rewritten')
  const fresh = sendEtag(statSync(file.path))
  t.equal(await head({ etag }), null, 'the file changed since: the ETag no longer matches its stat')
  cache.remember(`example.test\u0000/f.bin\u0000${fresh}\u0000undefined`, join(file.path, '..', 'gone'))
  t.equal(await head({ etag: fresh }), null, 'an alias to a file that is gone')
})
