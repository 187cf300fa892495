// Shared caches in front of the plugin (nginx proxy_cache, Varnish): the origin app, an HTTP/1.1 and
// an h2c client, and the check of a response's digest fields against the bytes the client received,
// recomputed with node:crypto.
import { createHash } from 'node:crypto'
import { connect, type IncomingHttpHeaders } from 'node:http2'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import fastifyStatic from '@fastify/static'
import { request } from 'undici'
import { staticHeaders } from '../../lib/index'
import digestFields = require('../../lib/index')
import type { Test } from 'tap'
import type { Closeable } from './proxy-harness'

/** What the routes send: JSON large enough that a wrong digest cannot be a coincidence. */
export const JSON_BODY = JSON.stringify({ resource: 'cached', items: Array.from({ length: 40 }, (_, i) => `item-${i}`) })
export const FILE_BODY = JSON.stringify({ file: 'served by @fastify/static', n: Array.from({ length: 40 }, (_, i) => i) })
/** A Repr-Digest that names no representation of either route. */
export const STALE = `sha-256=:${Buffer.alloc(32).toString('base64')}:`
/** What the routes and the static files say of their freshness (RFC 9111 §5.2.2.1, §5.2.2.9). */
export const CACHEABLE = 'public, max-age=60'

export interface Origin {
  readonly port: number
  /** How many requests for `url` (path and query) reached the app: a response from the cache adds none. */
  hits (url: string): number
  /** The methods of the requests for `url` that reached the app, in order. */
  methods (url: string): string[]
}

/**
 * A listening Fastify app with the plugin (default options, so `conditional` is on): `/json` (JSON,
 * `Cache-Control: public, max-age=60`), `/unsolicited` (the same with `contentDigest: true`),
 * `/files/f.json` (@fastify/static, `maxAge` 60 s) and `/own-406` (a 406 with that Cache-Control). Any query string reaches the same route: each
 * case asks for its own URL, so it starts with nothing stored.
 */
export async function startOrigin (t: Closeable): Promise<Origin> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-cache-origin-'))
  await writeFile(join(dir, 'f.json'), FILE_BODY)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await rm(dir, { recursive: true, force: true })
  })
  const seen: Array<[string, string]> = []
  app.addHook('onRequest', async (req) => { seen.push([req.method, req.url]) })
  await app.register(digestFields)
  await app.register(fastifyStatic, { root: dir, prefix: '/files/', maxAge: 60_000, setHeaders: staticHeaders })
  app.get('/json', async (_req, reply) => reply.type('application/json').header('cache-control', CACHEABLE).send(JSON_BODY))
  app.get('/unsolicited', { digest: { contentDigest: true } }, async (_req, reply) =>
    reply.type('application/json').header('cache-control', CACHEABLE).send(JSON_BODY))
  // A 406 of the route's own with explicit freshness, as the plugin's carried the route's Cache-Control: what a cache does with it.
  app.get('/own-406', async (_req, reply) =>
    reply.code(406).type('application/json').header('cache-control', CACHEABLE).send(JSON_BODY))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const methods = (url: string): string[] => seen.filter(([, u]) => u === url).map(([m]) => m)
  return { port: (app.server.address() as AddressInfo).port, hits: (url) => methods(url).length, methods }
}

/** A response as the client received it; field values joined as one line each. */
export interface Received {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Buffer
}

export type Method = 'GET' | 'HEAD'
export type Client = (origin: string, path: string, headers?: Record<string, string>, method?: Method) => Promise<Received>

function flat (headers: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !name.startsWith(':')) out[name] = Array.isArray(value) ? value.join(', ') : String(value)
  }
  return out
}

/** HTTP/1.1 (undici). */
export const h1: Client = async (origin, path, headers = {}, method = 'GET') => {
  const res = await request(origin + path, { method, headers })
  const body = Buffer.from(await res.body.arrayBuffer())
  return { status: res.statusCode, headers: flat(res.headers), body }
}

/** Cleartext HTTP/2 with prior knowledge (node:http2), one session per request. */
export const h2c: Client = async (origin, path, headers = {}, method = 'GET') => {
  const session = connect(origin)
  try {
    const stream = session.request({ ':method': method, ':path': path, ...headers })
    const chunks: Buffer[] = []
    stream.on('data', (chunk: Buffer) => chunks.push(chunk))
    const head = new Promise<IncomingHttpHeaders>((resolve, reject) => {
      stream.once('response', resolve)
      stream.once('error', reject)
    })
    // Listened for from the start: a response without content ends as soon as its headers arrive.
    const ended = new Promise<void>((resolve, reject) => {
      stream.once('end', resolve)
      stream.once('error', reject)
    })
    const [got] = await Promise.all([head, ended])
    return { status: Number(got[':status']), headers: flat(got), body: Buffer.concat(chunks) }
  } finally {
    session.close()
  }
}

const NODE_NAMES: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' }

/** The members of a digest field (`alg=:base64:`, RFC 9530 §2), in order. */
export function members (value: string | undefined): Array<[string, string]> {
  if (value === undefined) return []
  return value.split(',').map((m) => m.trim()).filter((m) => m !== '').map((m) => {
    const eq = m.indexOf('=')
    return [m.slice(0, eq), m.slice(eq + 1)]
  })
}

/**
 * What is wrong with `field` of `res`: it must hold `alg` alone, whose value is the digest of `bytes`
 * computed here. [] when nothing is.
 */
export function digestProblems (res: Received, field: string, alg: string, bytes: Buffer | string): string[] {
  const got = members(res.headers[field])
  if (got.length === 0) return [`${field} missing`]
  const problems: string[] = []
  const algs = got.map(([a]) => a)
  if (algs.join() !== alg) problems.push(`${field} in ${algs.join(', ')} instead of ${alg}`)
  const value = got.find(([a]) => a === alg)?.[1]
  if (value !== undefined && NODE_NAMES[alg] !== undefined) {
    const expected = `:${createHash(NODE_NAMES[alg]).update(bytes).digest('base64')}:`
    if (value !== expected) problems.push(`${field} ${alg} is not the digest of the bytes received`)
  }
  return problems
}

/** A cache in front of the origin, as one client reaches it. */
export interface Via {
  readonly origin: Origin
  /** The cache's origin for this client (nginx: its h2c listener for h2c). */
  readonly base: string
  readonly client: Client
  /** Whether the cache says it answered from what it stored (nginx: X-Cache; Varnish: two X-Varnish ids). */
  hit (res: Received): boolean
}

/** The cached bodies: the routes' and the file's. */
export const PATHS: ReadonlyArray<readonly [string, string]> = [['/json', JSON_BODY], ['/files/f.json', FILE_BODY]]

export type WantField = 'want-content-digest' | 'want-repr-digest'
const FIELD_OF: Record<WantField, string> = { 'want-content-digest': 'content-digest', 'want-repr-digest': 'repr-digest' }

/**
 * sha-256, sha-512, sha-256, sha-512 asked for in `want` on `url`: what each client received, and the
 * problems digestProblems() found in it.
 */
export async function askInTurn (via: Via, url: string, want: WantField, bytes: string): Promise<Array<{ res: Received, problems: string[] }>> {
  const out = []
  for (const alg of ['sha-256', 'sha-512', 'sha-256', 'sha-512']) {
    const res = await via.client(via.base, url, { [want]: `${alg}=1` })
    out.push({ res, problems: res.body.equals(Buffer.from(bytes)) ? digestProblems(res, FIELD_OF[want], alg, bytes) : ['another body'] })
  }
  return out
}

/** (a) Each client receives the algorithm it asked for, valid for its bytes; the repeats come from the cache. */
export async function eachItsOwn (t: Test, via: Via, url: string, want: WantField, bytes: string): Promise<void> {
  const got = await askInTurn(via, url, want, bytes)
  got.forEach(({ res, problems }, i) => {
    t.equal(res.status, 200, `${url} ${want} (${i + 1})`)
    t.same(problems, [], `${url} ${want} (${i + 1}): the algorithm asked for, the digest of the bytes received`)
    t.equal(via.hit(res), i >= 2, `${url} ${want} (${i + 1}): ${i >= 2 ? 'from the cache' : 'from the app'}`)
  })
  t.equal(via.origin.hits(url), 2, `${url}: the app answered each variant once`)
}

/**
 * (b) A stale Repr-Digest gets the 406 with the current Repr-Digest; the 406 is not stored: a plain
 * GET and a GET naming the current digest then get the 200, the latter from the cache.
 */
export async function staleThenPlain (t: Test, via: Via, url: string, bytes: string): Promise<void> {
  for (const method of ['GET', 'HEAD'] as const) {
    const refused = await via.client(via.base, url, { 'repr-digest': STALE }, method)
    t.equal(refused.status, 406, `${method} ${url}: a stale Repr-Digest gets 406`)
    t.same(digestProblems(refused, 'repr-digest', 'sha-256', bytes), [], `${method} ${url}: the 406 names the current representation`)
    t.equal(refused.headers['cache-control'], 'no-store, no-transform', `${method} ${url}: the 406 is not to be stored`)
    t.notOk(via.hit(refused), `${method} ${url}: from the app`)
  }
  const plain = await via.client(via.base, url)
  t.equal(plain.status, 200, `${url}: a plain GET after the 406 gets the 200, not the 406`)
  t.equal(plain.body.toString(), bytes, `${url}: its body`)
  t.notOk(via.hit(plain), `${url}: nothing was stored for it`)
  const current = await via.client(via.base, url, { 'repr-digest': `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:` })
  t.equal(current.status, 200, `${url}: the current Repr-Digest gets the 200`)
  t.equal(current.body.toString(), bytes, `${url}: its body`)
  t.ok(via.hit(current), `${url}: from the cache, which stored the 200`)
  const again = await via.client(via.base, url, { 'repr-digest': STALE })
  t.equal(again.status, 200, `${url}: a stale Repr-Digest now gets the stored 200 (Repr-Digest is not in Vary)`)
  t.equal(again.body.toString(), bytes, `${url}: the current representation`)
  t.ok(via.hit(again), `${url}: from the cache`)
  // With Want-Repr-Digest, the stored 200 of that variant tells the client the current digest.
  const want = { 'want-repr-digest': 'sha-256=1' }
  t.notOk(via.hit(await via.client(via.base, url, want)), `${url}: the Want-Repr-Digest variant fetched`)
  const told = await via.client(via.base, url, { ...want, 'repr-digest': STALE })
  t.equal(told.status, 200, `${url}: a stale Repr-Digest with Want-Repr-Digest`)
  t.ok(via.hit(told), `${url}: from the cache`)
  t.same(digestProblems(told, 'repr-digest', 'sha-256', bytes), [], `${url}: the stored 200 names the current representation`)
}

const WANT_BOTH = { 'want-content-digest': 'sha-256=1', 'want-repr-digest': 'sha-256=1' }

/**
 * (c) HEAD and GET share what the cache stores: a HEAD answered from a stored GET carries the GET's
 * header fields (RFC 9110 §9.3.2), so its Content-Digest is that of the GET's content, not of the
 * empty content the app sends for a HEAD (RFC 9530 B.2). A HEAD the cache has not seen is fetched
 * with GET (nginx proxy_cache_convert_head, Varnish's builtin vcl_recv): the same again.
 */
export async function headAfterGet (t: Test, via: Via, path: string, bytes: string, tag: string): Promise<void> {
  const [getFirst, headFirst] = [`${path}?c=${tag}-get-first`, `${path}?c=${tag}-head-first`]
  const url = path
  const get = await via.client(via.base, getFirst, WANT_BOTH)
  t.same([...digestProblems(get, 'content-digest', 'sha-256', bytes), ...digestProblems(get, 'repr-digest', 'sha-256', bytes)], [], `${url}: the GET`)
  const head = await via.client(via.base, getFirst, WANT_BOTH, 'HEAD')
  t.equal(head.status, 200, `${url}: HEAD`)
  t.equal(head.body.byteLength, 0, `${url}: a HEAD has no content`)
  t.ok(via.hit(head), `${url}: the HEAD is answered from the stored GET`)
  t.equal(head.headers['content-length'], String(Buffer.byteLength(bytes)), `${url}: the GET's Content-Length`)
  t.same(digestProblems(head, 'repr-digest', 'sha-256', bytes), [], `${url}: the HEAD's Repr-Digest is the representation's`)
  t.same(digestProblems(head, 'content-digest', 'sha-256', bytes), [], `${url}: its Content-Digest is the stored GET's content's`)
  const first = await via.client(via.base, headFirst, WANT_BOTH, 'HEAD')
  t.notOk(via.hit(first), `${url}: a HEAD first`)
  t.same(digestProblems(first, 'content-digest', 'sha-256', bytes), [], `${url}: fetched with GET, it carries the GET's Content-Digest`)
  const then = await via.client(via.base, headFirst, WANT_BOTH)
  t.ok(via.hit(then), `${url}: the GET after it comes from the cache`)
  t.equal(then.body.toString(), bytes, `${url}: its body`)
  t.same([...digestProblems(then, 'content-digest', 'sha-256', bytes), ...digestProblems(then, 'repr-digest', 'sha-256', bytes)], [], `${url}: valid for its bytes`)
  t.same([...via.origin.methods(getFirst), ...via.origin.methods(headFirst)], ['GET', 'GET'],
    `${url}: the app answered one GET per URL, the HEAD first included`)
}

/**
 * What every cache is held to, for one client (`name`: its protocol): each client gets the algorithm it asked
 * for, an unsolicited digest and an asked-for one are two variants, the 406 is never stored, a HEAD after a GET.
 */
export function cacheCases (t: Test, via: Via, name: string): void {
  t.test(`${name}: each client gets the algorithm it asked for`, async (t) => {
    for (const [path, bytes] of PATHS) {
      for (const want of ['want-content-digest', 'want-repr-digest'] as const) await eachItsOwn(t, via, `${path}?a=${name}-${want}`, want, bytes)
    }
  })
  t.test(`${name}: unsolicited Content-Digest (contentDigest: true) and an asked-for one are two variants`, async (t) => {
    const url = `/unsolicited?a=${name}`
    const sha512 = { 'want-content-digest': 'sha-512=1' }
    const got = [await via.client(via.base, url), await via.client(via.base, url, sha512),
      await via.client(via.base, url), await via.client(via.base, url, sha512)]
    got.forEach((res, i) => {
      t.same(digestProblems(res, 'content-digest', i % 2 === 0 ? 'sha-256' : 'sha-512', JSON_BODY), [], `(${i + 1})`)
      t.equal(via.hit(res), i >= 2, `(${i + 1}) ${i >= 2 ? 'from the cache' : 'from the app'}`)
    })
  })
  t.test(`${name}: the 406 is never stored`, async (t) => {
    for (const [path, bytes] of PATHS) await staleThenPlain(t, via, `${path}?b=${name}`, bytes)
  })
  t.test(`${name}: HEAD after GET`, async (t) => {
    for (const [path, bytes] of PATHS) await headAfterGet(t, via, path, bytes, name)
  })
}
