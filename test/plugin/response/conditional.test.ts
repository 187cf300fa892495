// The 406 rule (docs/design.md, "The 406 rule"): a GET or HEAD whose Repr-Digest names another
// representation gets 406 with problem details and the Repr-Digest of the current one.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import type { LightMyRequestResponse } from 'fastify'
import { staticHeaders } from '../../../lib/index'
import { buildApp, decode, sf, EMPTY_SHA256 } from '../../helpers'
import type { TapTest } from '../request/upload-helpers'

const BODY = '{"hello": "world"}\n'
const STALE = 'sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:'

/** A 406's problem details (RFC 9457), as the plugin's other problems without a draft type. */
function assertProblem (t: TapTest, res: LightMyRequestResponse, label = ''): void {
  t.equal(res.statusCode, 406, label)
  t.equal(res.headers['content-type'], 'application/problem+json', `${label} content-type`)
  t.equal(res.headers['content-length'], String(res.rawPayload.byteLength), `${label} content-length`)
  t.same(res.json(), {
    type: 'about:blank',
    title: 'Not Acceptable',
    status: 406,
    detail: 'The request\'s Repr-Digest does not match the current representation, whose digest is in the Repr-Digest field',
    code: 'FST_DIGEST_STALE_REPRESENTATION'
  }, `${label} problem details`)
}

test('exchange 6: a non-matching Repr-Digest gets 406 with the right sha-256 Repr-Digest', async (t) => {
  const app = await buildApp(t)
  app.get('/items/123', async (_req, reply) => reply.type('application/json').send(BODY))
  const res = await app.inject({ url: '/items/123', headers: { 'repr-digest': STALE } })
  assertProblem(t, res)
  t.equal(res.headers['repr-digest'], 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:')
  t.equal(res.headers['repr-digest'], sf(BODY))
  t.equal(res.headers['content-digest'], undefined, 'none asked for, none configured')
  t.equal(res.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest')
  const head = await app.inject({ method: 'HEAD', url: '/items/123', headers: { 'repr-digest': STALE } })
  t.equal(head.statusCode, 406)
  t.equal(head.body, '', 'a HEAD has no content')
  t.equal(head.headers['content-type'], 'application/problem+json')
  t.equal(head.headers['content-length'], res.headers['content-length'], 'the Content-Length a GET gets')
  t.equal(head.headers['repr-digest'], sf(BODY))
})

// RFC 9110 §8.8: validators describe the selected representation; a 406 has none. Neither do Content-Location
// (§8.7) and Content-Language (§8.5) describe its problem details.
test('a 406 keeps no validator or representation metadata of the response it replaces', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'stale-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'f.json'), BODY)
  const app = await buildApp(t)
  await app.register(fastifyStatic, { root: dir, prefix: '/files/', setHeaders: staticHeaders })
  app.get('/items/123', async (_req, reply) => reply.type('application/json').header('etag', '"v1"').header('last-modified', new Date(0).toUTCString())
    .header('content-location', '/items/123.json').header('content-language', 'en').header('content-disposition', 'attachment; filename="123.json"').send(BODY))
  for (const url of ['/items/123', '/files/f.json']) {
    const ok = await app.inject({ url })
    t.type(ok.headers.etag, 'string', `${url}: the 200 has an ETag`)
    t.type(ok.headers['last-modified'], 'string', `${url}: and a Last-Modified`)
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await app.inject({ method, url, headers: { 'repr-digest': STALE } })
      t.equal(res.statusCode, 406, `${method} ${url}`)
      t.same([res.headers.etag, res.headers['last-modified'], res.headers['content-location'], res.headers['content-language'], res.headers['content-disposition']],
        [undefined, undefined, undefined, undefined, undefined], `${method} ${url}: no validators, location, language or disposition`)
      t.equal(res.headers['repr-digest'], sf(BODY), `${method} ${url}: the current Repr-Digest`)
    }
  }
})

// RFC 9111 §3, §5.2.2.5: a 406 stored with the route's freshness would answer every request for the URL (a cache
// keys it by URL and Vary, not by the request's Repr-Digest; test/proxies/cache-*.test.ts measure nginx and Varnish).
test('a 406 is never stored: Cache-Control: no-store replaces the route\'s, Expires and the targeted fields go', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'stale-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'f.json'), BODY)
  const app = await buildApp(t)
  await app.register(fastifyStatic, { root: dir, prefix: '/files/', maxAge: 60_000, setHeaders: staticHeaders })
  const expires = new Date(Date.now() + 60_000).toUTCString()
  app.get('/items/123', async (_req, reply) => reply.type('application/json').header('cache-control', 'public, max-age=60').header('expires', expires)
    .header('cdn-cache-control', 'max-age=600').header('surrogate-control', 'max-age=600').header('x-kept', 'yes').send(BODY))
  const ok = await app.inject({ url: '/items/123' })
  t.same([ok.headers['cache-control'], ok.headers.expires, ok.headers['cdn-cache-control'], ok.headers['surrogate-control']],
    ['public, max-age=60', expires, 'max-age=600', 'max-age=600'], 'the 200 keeps the route\'s freshness')
  t.equal((await app.inject({ url: '/files/f.json' })).headers['cache-control'], 'public, max-age=60', 'and @fastify/static\'s')
  for (const url of ['/items/123', '/files/f.json']) {
    for (const method of ['GET', 'HEAD'] as const) {
      const res = await app.inject({ method, url, headers: { 'repr-digest': STALE } })
      t.equal(res.statusCode, 406, `${method} ${url}`)
      // and, carrying a digest field, no-transform (noTransform's default)
      t.equal(res.headers['cache-control'], 'no-store, no-transform', `${method} ${url}: not to be stored`)
      t.same([res.headers.expires, res.headers['cdn-cache-control'], res.headers['surrogate-control']], [undefined, undefined, undefined],
        `${method} ${url}: no freshness of the replaced response`)
    }
  }
  const kept = await app.inject({ url: '/items/123', headers: { 'repr-digest': STALE } })
  t.equal(kept.headers['x-kept'], 'yes', 'the route\'s other fields stay')
  const current = await app.inject({ url: '/items/123', headers: { 'repr-digest': sf(BODY) } })
  t.equal(current.statusCode, 200, 'a current Repr-Digest')
  t.equal(current.headers['cache-control'], 'public, max-age=60', 'gets the 200 with the route\'s Cache-Control')
})

test('the 406\'s Content-Digest is that of its problem details (a HEAD: of empty content)', async (t) => {
  for (const strict of [false, true]) {
    const app = await buildApp(t, { contentDigest: true, reprDigest: true, strict })
    app.get('/', async (_req, reply) => reply.type('application/json').send(BODY))
    app.head('/explicit', async (_req, reply) => reply.setReprDigest({ 'sha-256': Buffer.alloc(32, 1) }).send())
    const res = await app.inject({ url: '/', headers: { 'repr-digest': STALE } })
    assertProblem(t, res, `strict=${strict}`)
    t.equal(res.headers['content-digest'], sf(res.rawPayload), `strict=${strict}: the problem body's`)
    t.equal(res.headers['repr-digest'], sf(BODY), 'the current representation\'s')
    const wanted = await app.inject({ url: '/', headers: { 'repr-digest': STALE, 'want-content-digest': 'sha-512=3' } })
    t.equal(wanted.headers['content-digest'], sf(wanted.rawPayload, 'sha-512'), 'the algorithm asked for')
    const head = await app.inject({ method: 'HEAD', url: '/', headers: { 'repr-digest': STALE } })
    t.equal(head.statusCode, 406)
    t.equal(head.body, '')
    t.equal(head.headers['content-digest'], EMPTY_SHA256, 'a HEAD\'s content is empty')
    t.equal(head.headers['content-length'], res.headers['content-length'])
    const explicit = await app.inject({ method: 'HEAD', url: '/explicit', headers: { 'repr-digest': STALE } })
    t.equal(explicit.statusCode, 406, 'an explicit HEAD route with a declared digest')
    t.equal(explicit.body, '')
    t.equal(explicit.headers['content-length'], res.headers['content-length'])
    t.equal(explicit.headers['content-digest'], EMPTY_SHA256)
  }
})

test('matching, partial and ignored conditionals', async (t) => {
  const app = await buildApp(t, { algorithms: ['sha-256', 'sha-512'] })
  app.get('/', async (_req, reply) => reply.type('application/json').send(BODY))
  app.get('/off', { digest: { conditional: false } }, async () => BODY)
  app.get('/missing-route-error', async (_req, reply) => reply.code(500).send('error body'))
  app.post('/', async () => 'posted')
  const cases: Array<[string, string, Record<string, string>, number]> = [
    ['GET', '/', { 'repr-digest': sf(BODY) }, 200],
    ['GET', '/', { 'repr-digest': sf(BODY, 'sha-512') }, 200],
    ['GET', '/', { 'repr-digest': `${sf(BODY)}, ${sf(BODY, 'sha-512')}` }, 200],
    ['GET', '/', { 'repr-digest': `${sf(BODY)}, ${sf('other', 'sha-512')}` }, 406],
    ['GET', '/', { 'repr-digest': sf('other', 'sha-512') }, 406],
    ['GET', '/', { 'repr-digest': 'sha-256=:AAAA:' }, 406],
    ['GET', '/', { 'repr-digest': sf('other', 'md5') }, 200],
    ['GET', '/', { 'repr-digest': 'SHA-256=:AAAA:' }, 200],
    ['GET', '/', { 'repr-digest': 'sha-256=bad' }, 200],
    ['GET', '/off', { 'repr-digest': STALE }, 200],
    ['GET', '/missing-route-error', { 'repr-digest': STALE }, 500],
    ['GET', '/nope', { 'repr-digest': STALE }, 404]
  ]
  for (const [method, url, headers, status] of cases) {
    const res = await app.inject({ method: method as 'GET', url, headers })
    t.equal(res.statusCode, status, `${method} ${url} ${JSON.stringify(headers)}`)
  }
})

test('the server\'s first algorithm when sha-256 is not enabled', async (t) => {
  const app = await buildApp(t, { algorithms: ['sha-512'] })
  app.get('/', async () => 'x')
  const res = await app.inject({ url: '/', headers: { 'repr-digest': sf('y', 'sha-512') } })
  t.equal(res.statusCode, 406)
  t.equal(res.headers['repr-digest'], sf('x', 'sha-512'))
})

test('streamed and declared representations', async (t) => {
  const app = await buildApp(t, { contentDigest: true, reprDigest: true })
  const declared = Buffer.alloc(32, 3)
  app.get('/stream', async (_req, reply) => reply.type('text/plain').send(Readable.from(['a', 'b'])))
  app.get('/declared', async (_req, reply) => reply.setReprDigest({ 'sha-256': declared }).send('x'))
  let res = await app.inject({ url: '/stream', headers: { 'repr-digest': STALE, te: 'trailers' } })
  assertProblem(t, res, 'a stream')
  t.same(res.trailers, {}, 'no trailers')
  t.equal(res.headers['content-digest'], sf(res.rawPayload), 'the problem body\'s')
  t.equal(res.headers['repr-digest'], sf('ab'))
  res = await app.inject({ url: '/stream', headers: { 'repr-digest': sf('ab'), te: 'trailers' } })
  t.equal(res.statusCode, 200)
  t.equal(res.body, 'ab')
  t.equal(res.headers['content-digest'], sf('ab'), 'a conditional stream is buffered so the headers can answer it')
  res = await app.inject({ url: '/declared', headers: { 'repr-digest': `sha-256=:${declared.toString('base64')}:` } })
  t.equal(res.statusCode, 200)
  res = await app.inject({ url: '/declared', headers: { 'repr-digest': sf('x') } })
  assertProblem(t, res, 'the declared digest is the representation\'s')
  t.equal(res.headers['repr-digest'], `sha-256=:${declared.toString('base64')}:`)
})

test('with compression: the representation as each mode defines it', async (t) => {
  for (const strict of [false, true]) {
    const app = await buildApp(t, { strict }, {}, async (app) => {
      await app.register(compress, { threshold: 1, syncThreshold: 100000 })
    })
    const text = 'compress me '.repeat(100)
    app.get('/', async (_req, reply) => reply.type('text/plain').send(text))
    const plain = await app.inject({ url: '/', headers: { 'accept-encoding': 'gzip' } })
    t.equal(plain.headers['content-encoding'], 'gzip')
    const coded = sf(plain.rawPayload)
    const identity = sf(decode(plain.rawPayload, 'gzip'))
    const current = strict ? coded : identity
    const stale = strict ? identity : coded
    const ok = await app.inject({ url: '/', headers: { 'accept-encoding': 'gzip', 'repr-digest': current } })
    t.equal(ok.statusCode, 200, `strict=${strict}: the mode's representation matches`)
    const no = await app.inject({ url: '/', headers: { 'accept-encoding': 'gzip', 'repr-digest': stale } })
    assertProblem(t, no, `strict=${strict}: the other mode's value does not`)
    t.equal(no.headers['repr-digest'], current)
    t.equal(no.headers['content-encoding'], undefined, 'the problem details are not coded')
  }
})
