// Resource limits, measured by counting what node:crypto hashes (every Hash
// fed and every byte fed to it, one-shot digests included; nothing of the
// plugin or of fastify is replaced; the checksums are plain code, not seen):
// * a request or response naming every enabled algorithm, or thousands of
//   members, costs at most one hash pass per algorithm over each byte
//   sequence (the bytes as received or sent, and the decoded or identity
//   ones when a content coding stands between them);
// * Want-* and digest fields cannot make the server compute algorithms that
//   are not enabled (deprecated ones included);
// * decoded request content is hashed up to the route's bodyLimit, then
//   refused with 413 (a decompression bomb costs bounded work and memory);
// * the whole-file digest cache holds at most fileCacheSize files.
import { test } from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { brotliCompressSync, gzipSync, constants as zlib } from 'node:zlib'
import fc from 'fast-check'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import type { DigestAlgorithm, FastifyDigestFieldsOptions } from '../../types/index'
import digestFields = require('../../lib/index')
import { buildApp, pattern } from '../helpers'
import { countHashing, heapAfterGc, type HashCount } from './hardening-helpers'

const { ALGORITHMS, computeDigest, staticHeaders } = digestFields
const KEYS = [...ALGORITHMS.keys()]
const DEPRECATED = KEYS.filter((k) => ALGORITHMS.get(k)?.status === 'deprecated')
// The keys node:crypto computes, which the count sees.
const HASHES = new Set<string>(['sha-256', 'sha-512', 'md5', 'sha'])
const hashes = (algorithms: readonly string[]): string[] => algorithms.filter((a) => HASHES.has(a))

interface Closeable { teardown (fn: () => unknown): void }

function useSpy (t: Closeable): HashCount {
  const spy = countHashing()
  t.teardown(() => spy.restore())
  return spy
}

const field = (algorithms: readonly DigestAlgorithm[], data: Buffer | string): string =>
  algorithms.map((a) => `${a}=:${computeDigest(a, data).toString('base64')}:`).join(', ')
const unknownMembers = (n: number): string => Array.from({ length: n }, (_, i) => `x${i}=:AAAA:`).join(', ')

async function verifyApp (t: Closeable, opts: FastifyDigestFieldsOptions, withCompress = false, bodyLimit = 1024 * 1024): Promise<FastifyInstance> {
  const app = await buildApp(t, opts, { bodyLimit }, async (app) => {
    if (withCompress) await app.register(compress)
  })
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.addContentTypeParser('application/x-stream', (_req, payload, done) => done(null, payload))
  app.post('/parsed', async (request) => ({ verification: request.digestVerification }))
  app.post('/stream', async (request) => {
    let bytes = 0
    for await (const chunk of request.body as Readable) bytes += (chunk as Buffer).length
    return { bytes, verification: request.digestVerification }
  })
  return app
}

test('a request naming every enabled algorithm in every field, among thousands of members: one pass per algorithm', async (t) => {
  const spy = useSpy(t)
  const body = pattern(200_000)
  for (const algorithms of [KEYS, ['sha-512', 'crc32c']] as DigestAlgorithm[][]) {
    const app = await verifyApp(t, { algorithms, legacyDigest: true })
    const all = field(KEYS, body)
    const legacy = `SHA-256=${computeDigest('sha-256', body).toString('base64')}, MD5=${computeDigest('md5', body).toString('base64')}`
    for (const url of ['/parsed', '/stream']) {
      spy.reset()
      const res = await app.inject({
        method: 'POST',
        url,
        headers: {
          'content-type': url === '/parsed' ? 'application/octet-stream' : 'application/x-stream',
          'content-digest': `${unknownMembers(3000)}, ${all}`,
          'repr-digest': [all, all, unknownMembers(1000)],
          digest: legacy,
          // A trailer's algorithms are unknown until the end: every enabled one is hashed, still once.
          trailer: 'Content-Digest, Repr-Digest, Digest'
        },
        payload: body
      })
      t.equal(res.statusCode, 200, `${algorithms} ${url}`)
      t.equal(res.json().verification.verified, true)
      t.same(Object.fromEntries(spy.passes), Object.fromEntries(hashes(algorithms).map((a) => [a, 1])), 'one pass per enabled algorithm, none for others')
      t.same(Object.fromEntries(spy.bytes), Object.fromEntries(hashes(algorithms).map((a) => [a, body.length])), 'each byte once per algorithm')
    }
  }
})

test('coded request content: each algorithm hashes the received bytes once and the decoded bytes once', async (t) => {
  const spy = useSpy(t)
  const identity = pattern(300_000)
  const coded = gzipSync(identity)
  // Computed before counting: the count sees every node:crypto hash of the process.
  const contentDigest = field(KEYS, coded)
  const reprDigest = `${unknownMembers(2000)}, ${field(KEYS, identity)}`
  for (const withCompress of [false, true]) {
    const app = await verifyApp(t, { algorithms: KEYS }, withCompress)
    spy.reset()
    const res = await app.inject({
      method: 'POST',
      url: '/parsed',
      headers: {
        'content-type': 'application/octet-stream',
        'content-encoding': 'gzip',
        'content-digest': contentDigest,
        'repr-digest': reprDigest
      },
      payload: coded
    })
    t.equal(res.statusCode, 200, `compress: ${withCompress}`)
    t.equal(res.json().verification.verified, true)
    t.same(Object.fromEntries(spy.passes), Object.fromEntries(hashes(KEYS).map((a) => [a, 2])), 'a pass over the coded bytes and one over the decoded ones')
    t.same(Object.fromEntries(spy.bytes), Object.fromEntries(hashes(KEYS).map((a) => [a, coded.length + identity.length])), 'each byte of each once')
  }
})

test('a response wanted with every algorithm and a conditional naming them all: one pass per algorithm and byte sequence', async (t) => {
  const spy = useSpy(t)
  const text = 'a compressible representation\n'.repeat(2000)
  const want = KEYS.map((a, i) => `${a}=${10 - i}`).join(', ')
  const reprDigest = `${unknownMembers(2000)}, ${field(KEYS, text)}`
  for (const withCompress of [false, true]) {
    const app = await buildApp(t, { algorithms: KEYS, contentDigest: KEYS, reprDigest: KEYS }, {}, async (app) => {
      if (withCompress) await app.register(compress, { threshold: 0 })
    })
    app.get('/buffered', async (_request, reply) => reply.type('text/plain').send(text))
    app.get('/streamed', async (_request, reply) => reply.type('text/plain').send(Readable.from([text.slice(0, 1000), text.slice(1000)])))
    for (const url of ['/buffered', '/streamed']) {
      for (const te of [undefined, 'trailers']) {
        spy.reset()
        const res = await app.inject({
          url,
          headers: {
            'want-content-digest': `${unknownMembers(2000).replaceAll(':AAAA:', '10')}, ${want}`,
            'want-repr-digest': want,
            'repr-digest': reprDigest,
            'accept-encoding': 'gzip',
            ...(te === undefined ? {} : { te })
          }
        })
        const label = `compress: ${withCompress} ${url} te: ${te}`
        t.equal(res.statusCode, 200, label)
        const coded = res.headers['content-encoding'] === 'gzip'
        t.equal(coded, withCompress, label)
        const over = KEYS.filter((a) => (spy.passes.get(a) ?? 0) > (coded ? 2 : 1) || (spy.bytes.get(a) ?? 0) > text.length + (coded ? res.rawPayload.length : 0))
        t.same(over, [], `${label}: at most one pass per algorithm over the identity${coded ? ' and one over the gzip bytes' : ''} (${JSON.stringify(Object.fromEntries(spy.passes))})`)
        t.equal(spy.bytes.get('sha-256'), text.length + (coded ? res.rawPayload.length : 0), `${label}: the wanted sha-256 over each byte sequence once`)
      }
    }
  }
})

test('Want-* and digest fields never make the server compute an algorithm that is not enabled', async (t) => {
  const spy = useSpy(t)
  for (const algorithms of [['sha-256', 'sha-512'], ['sha-512', 'md5']] as DigestAlgorithm[][]) {
    const app = await verifyApp(t, { algorithms, legacyDigest: true, contentDigest: true })
    app.get('/item', async () => ({ item: 1 }))
    const body = Buffer.from('{"hello":"world"}')
    const member = fc.tuple(fc.constantFrom(...KEYS), fc.integer({ min: 0, max: 10 })).map(([a, w]) => `${a}=${w}`)
    const wants = fc.array(member, { minLength: 1, maxLength: 10 }).map((ms) => ms.join(', '))
    const digests = fc.subarray(KEYS, { minLength: 1 }).map((as) => field(as, body))
    const legacy = fc.constantFrom('MD5', 'SHA', 'UNIXSUM', 'UNIXCKSUM', 'ADLER32', 'CRC32C', 'SHA-256').map((n) => `${n}=AAAAAAAA`)
    await fc.assert(fc.asyncProperty(wants, wants, digests, digests, legacy, fc.boolean(), async (wantContent, wantRepr, content, repr, digest, post) => {
      spy.reset()
      const headers = { 'want-content-digest': wantContent, 'want-repr-digest': wantRepr, 'content-digest': content, 'repr-digest': repr, digest }
      const res = post
        ? await app.inject({ method: 'POST', url: '/parsed', headers: { ...headers, 'content-type': 'application/octet-stream' }, payload: body })
        : await app.inject({ url: '/item', headers })
      if (res.statusCode >= 500) throw new Error(res.body)
      for (const a of spy.passes.keys()) {
        if (!algorithms.includes(a as DigestAlgorithm)) throw new Error(`${a} was computed; enabled: ${algorithms}`)
      }
    }), { seed: 6, numRuns: 150 })
    t.pass(`only ${algorithms} computed`)
  }
  t.ok(DEPRECATED.length === 6)
})

test('decompression bombs: decoded content is hashed up to the bodyLimit, then 413; memory stays bounded', async (t) => {
  const spy = useSpy(t)
  const limit = 256 * 1024
  const bombs: Array<[string, Buffer]> = [
    ['gzip', gzipSync(Buffer.alloc(16 * 1024 * 1024), { level: 9 })],
    ['br', brotliCompressSync(Buffer.alloc(16 * 1024 * 1024), { params: { [zlib.BROTLI_PARAM_QUALITY]: 5 } })]
  ]
  for (const [coding, bomb] of bombs) t.ok(bomb.length < 100 * 1024, `${coding}: 16 MiB in ${bomb.length} bytes`)
  const reprDigest = field(['sha-256', 'sha-512'], 'anything')
  const heapBefore = await heapAfterGc()
  for (const withCompress of [false, true]) {
    const app = await verifyApp(t, { algorithms: ['sha-256', 'sha-512'] }, withCompress, limit)
    for (const [coding, bomb] of bombs) {
      for (const url of ['/parsed', '/stream']) {
        spy.reset()
        const res = await app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': url === '/parsed' ? 'application/octet-stream' : 'application/x-stream', 'content-encoding': coding, 'repr-digest': reprDigest },
          payload: bomb
        })
        const label = `compress: ${withCompress} ${coding} ${url}`
        t.equal(res.statusCode, 413, label)
        // fastify's own 413 for a parsed body behind compress; the plugin's problem otherwise.
        if (!withCompress || url === '/stream') t.equal(res.json().code, 'FST_DIGEST_CONTENT_TOO_LARGE', label)
        // Decoded on the side or by compress, a Repr-Digest is hashed up to the limit only.
        await new Promise((resolve) => setTimeout(resolve, 20))
        const hashed = Math.max(spy.bytes.get('sha-256') ?? 0, spy.bytes.get('sha-512') ?? 0)
        t.ok(hashed <= limit, `${label}: ${hashed} decoded bytes hashed, not 16 MiB`)
      }
    }
  }
  const grown = (await heapAfterGc()) - heapBefore
  t.ok(grown < 16 * 1024 * 1024, `heap grew by ${Math.round(grown / 1024)} KiB over eight 16 MiB bombs`)
})

test('the whole-file digest cache is bounded by fileCacheSize: evicted files are hashed again', async (t) => {
  const spy = useSpy(t)
  const dir = await mkdtemp(join(tmpdir(), 'digest-limits-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const names = Array.from({ length: 6 }, (_, i) => `f${i}.bin`)
  for (const [i, name] of names.entries()) await writeFile(join(dir, name), pattern(1000 + i))
  for (const fileCacheSize of [0, 2, 100]) {
    const app = await buildApp(t, { reprDigest: true, fileCacheSize })
    await app.register(fastifyStatic, { root: dir, setHeaders: staticHeaders })
    spy.reset()
    // HEAD needs the whole file's digest, which only the cache or a pass gives.
    for (const round of [1, 2]) {
      for (const name of names) {
        const res = await app.inject({ method: 'HEAD', url: `/${name}` })
        t.equal(res.statusCode, 200)
        t.ok(res.headers['repr-digest'], `round ${round}`)
      }
    }
    const expected = fileCacheSize >= names.length ? names.length : names.length * 2
    t.equal(spy.passes.get('sha-256'), expected, `fileCacheSize ${fileCacheSize}: ${expected} hashing passes for 12 requests of 6 files`)
  }
})
