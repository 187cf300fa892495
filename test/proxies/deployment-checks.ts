// What reaches a client through a reverse proxy: one Fastify app with the
// plugin (every digest field on), the scenarios a deployment serves (a
// buffered JSON body, a stream, a static file, HEAD, a range, a 304, a
// verified upload), a client that keeps the bytes exactly as received (no
// decoding, HTTP/1.1 or cleartext HTTP/2), and one checker that recomputes
// each digest field from those bytes with node:crypto and says, per field,
// whether it is right, wrong or absent. The proxy files state, per proxy,
// configuration, protocol and scenario, the verdicts measured.
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { connect as h2connect, type ClientHttp2Session } from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { gunzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import type { FastifyDigestFieldsOptions } from '../../types/index'
import digestFields = require('../../lib/index')
import { startProxy, type ProxyKind, type ProxyPlace, type RunningProxy } from './proxy-harness'

export type Verdict = 'right' | 'wrong' | 'absent'
export type Field = 'content-digest' | 'repr-digest' | 'unencoded-digest'
export const FIELDS: readonly Field[] = ['content-digest', 'repr-digest', 'unencoded-digest']

/** A JSON document of about 1.6 KiB (compressible: every proxy here compresses it when told to). */
export const JSON_BODY = Buffer.from(JSON.stringify({
  items: Array.from({ length: 24 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['alpha', 'beta'], ok: i % 2 === 0 }))
}))
/** What the streamed route writes, in two chunks. */
export const STREAM_BODY = Buffer.from(JSON.stringify({ stream: Array.from({ length: 40 }, (_, i) => `line ${i}`) }))
/** The static file (4 KiB of JSON): large enough for a range inside it. */
export const FILE_BODY = Buffer.from(JSON.stringify({ file: Array.from({ length: 180 }, (_, i) => `entry ${i}`) }))
/** The part of the file a range request asks for. */
export const RANGE = { first: 100, last: 599 }
/** An upload and its Content-Digest. */
export const UPLOAD_BODY = Buffer.from(JSON.stringify({ upload: 'x'.repeat(200) }))
/** What the control route's digest fields describe: not the bytes it sends. */
const OTHER_BYTES = Buffer.from('not the body')

const NODE_NAMES: Record<string, string> = { 'sha-256': 'sha256', 'sha-512': 'sha512' }

/** `alg=:base64:` over `bytes`, computed here with node:crypto. */
export function sfDigest (bytes: Buffer, alg = 'sha-256'): string {
  return `${alg}=:${createHash(NODE_NAMES[alg] as string).update(bytes).digest('base64')}:`
}

/**
 * The Fastify app every proxy test puts behind its proxy; every app of these
 * tests is built here. `compressInApp` registers @fastify/compress (the app
 * compresses, the proxy is told not to).
 */
export async function deploymentApp (t: Test, compressInApp: boolean,
  extra: FastifyDigestFieldsOptions = {}): Promise<{ app: FastifyInstance, port: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'digest-deploy-'))
  writeFileSync(join(dir, 'data.json'), FILE_BODY)
  const app = Fastify()
  t.teardown(async () => {
    await app.close()
    await rm(dir, { recursive: true, force: true })
  })
  if (compressInApp) await app.register(compress, { encodings: ['gzip'] })
  await app.register(digestFields, { contentDigest: true, reprDigest: true, unencodedDigest: true, ...extra })
  await app.register(fastifyStatic, { root: dir, prefix: '/files/', setHeaders: digestFields.staticHeaders })
  const stream = (): Readable => Readable.from([STREAM_BODY.subarray(0, 700), STREAM_BODY.subarray(700)])
  app.get('/json', (request, reply) => { reply.type('application/json').send(JSON_BODY) })
  app.get('/nt/json', (request, reply) => {
    reply.type('application/json').header('cache-control', 'no-transform').send(JSON_BODY)
  })
  app.get('/stream', (request, reply) => { reply.type('application/json').send(stream()) })
  app.get('/nt/stream', (request, reply) => {
    reply.type('application/json').header('cache-control', 'no-transform').send(stream())
  })
  // What reached the app of the client's TE and Accept-Encoding fields.
  app.get('/te', { digest: false }, async (request) => ({
    te: request.headers.te ?? null, acceptEncoding: request.headers['accept-encoding'] ?? null
  }))
  // Trailers sent whatever the request's TE said (fastify's reply.trailer), the plugin off:
  // does the proxy pass trailers from the app at all?
  app.get('/app-trailer', { digest: false }, (request, reply) => {
    reply.type('application/json').trailer('content-digest', async () => sfDigest(STREAM_BODY)).send(stream())
  })
  app.post('/upload', async (request, reply) => {
    const verification = request.digestVerification
    return await reply.code(201).send({ verified: verification?.verified ?? null })
  })
  // Control: digest fields of other bytes, set by hand with the plugin off.
  app.get('/control', { digest: false }, (request, reply) => {
    reply.type('application/json').header('content-digest', sfDigest(OTHER_BYTES))
      .header('repr-digest', sfDigest(OTHER_BYTES)).header('unencoded-digest', sfDigest(OTHER_BYTES))
      .send(JSON_BODY)
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, port: (app.server.address() as { port: number }).port }
}

/** A response as the client received it: no content coding undone. */
export interface Received {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
  trailers: Record<string, string | string[] | undefined>
}

export interface Exchange {
  method?: string
  path: string
  headers?: Record<string, string>
  body?: Buffer
}

export type Protocol = 'h1' | 'h2'

/** The client side of one proxy: HTTP/1.1 (keep-alive) and cleartext HTTP/2 (prior knowledge). */
export class RawClient {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 4 })
  private session: ClientHttp2Session | null = null

  constructor (private readonly origin: string, private readonly h2origin: string) {}

  async send (protocol: Protocol, exchange: Exchange): Promise<Received> {
    return protocol === 'h1' ? await this.h1(exchange) : await this.h2(exchange)
  }

  close (): void {
    this.agent.destroy()
    this.session?.close()
  }

  private async h1 ({ method = 'GET', path, headers = {}, body }: Exchange): Promise<Received> {
    const url = new URL(path, this.origin)
    return await new Promise<Received>((resolve, reject) => {
      const req = httpRequest(url, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.once('error', reject)
        res.once('end', () => {
          resolve({ status: res.statusCode as number, headers: res.headers, body: Buffer.concat(chunks), trailers: { ...res.trailers } })
        })
      })
      req.once('error', reject)
      req.end(body)
    })
  }

  private async h2 ({ method = 'GET', path, headers = {}, body }: Exchange): Promise<Received> {
    if (this.session === null || this.session.closed || this.session.destroyed) {
      const session = h2connect(this.h2origin)
      session.on('error', () => {})
      this.session = session
    }
    const stream = this.session.request({ ':method': method, ':path': path, ...headers }, { endStream: body === undefined })
    return await new Promise<Received>((resolve, reject) => {
      let head: Record<string, string | string[] | undefined> = {}
      let trailers: Record<string, string | string[] | undefined> = {}
      const chunks: Buffer[] = []
      stream.once('response', (h) => { head = { ...h } })
      stream.once('trailers', (h) => { trailers = { ...h } })
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.once('error', reject)
      stream.once('end', () => {
        const status = Number(head[':status'])
        delete head[':status']
        resolve({ status, headers: head as IncomingHttpHeaders, body: Buffer.concat(chunks), trailers })
      })
      if (body !== undefined) stream.end(body)
    })
  }
}

function single (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value
}

/** A digest field's value, from the header section or else the trailers. */
export function fieldValue (res: Received, field: Field): string | undefined {
  return single(res.headers[field]) ?? single(res.trailers[field])
}

/** The `alg=:b64:` members of a Dictionary value (sha-256 / sha-512 only here). */
function members (value: string): Array<{ alg: string, b64: string }> {
  return value.split(',').map((member) => {
    const match = /^\s*([a-z0-9-]+)=:([A-Za-z0-9+/=]*):\s*$/.exec(member)
    return match === null ? { alg: '?', b64: member } : { alg: match[1] as string, b64: match[2] as string }
  })
}

/** 'right' when every member of the field is the digest of `bytes`, 'wrong' when one is not, 'absent' without it. */
export function verdict (value: string | undefined, bytes: Buffer): Verdict {
  if (value === undefined) return 'absent'
  return members(value).every(({ alg, b64 }) => NODE_NAMES[alg] !== undefined &&
    createHash(NODE_NAMES[alg]).update(bytes).digest('base64') === b64)
    ? 'right'
    : 'wrong'
}

/** The content coding undone (gzip is the only one these proxies and the app apply here). */
export function decoded (res: Received): Buffer {
  const coding = single(res.headers['content-encoding'])
  if (coding === undefined || coding === 'identity') return res.body
  if (coding === 'gzip') return gunzipSync(res.body)
  throw new Error(`unexpected content-encoding ${coding}`)
}

/**
 * Each digest field of `res` against the bytes it must cover, computed here:
 * Content-Digest over the content exactly as received (empty for HEAD and 304);
 * Repr-Digest (default mode) and Unencoded-Digest over the representation with
 * its content coding undone: the decoded content of a full 200, or `whole`
 * (the representation a HEAD, a 206 or a 304 stands for).
 */
export function checkFields (res: Received, whole?: Buffer): Record<Field, Verdict> {
  const representation = whole ?? decoded(res)
  return {
    'content-digest': verdict(fieldValue(res, 'content-digest'), res.body),
    'repr-digest': verdict(fieldValue(res, 'repr-digest'), representation),
    'unencoded-digest': verdict(fieldValue(res, 'unencoded-digest'), representation)
  }
}

/** The digest fields `res` carried as trailers, space-separated ('' for none). */
export function trailerFields (res: Received): string {
  return FIELDS.filter((field) => res.trailers[field] !== undefined).join(' ')
}

export interface Scenario {
  exchange: (client: ScenarioContext) => Exchange
  /** The representation the response stands for when its content alone cannot say (HEAD, 206, 304). */
  whole?: Buffer
  /** The decoded content a full response must carry. */
  content?: Buffer
  /** What the decoded body must hold (a JSON object's members). */
  json?: Record<string, unknown>
}

export interface ScenarioContext { etag: string }

const GZIP = { 'accept-encoding': 'gzip' }

export const GZIP_JSON: Exchange = { path: '/json', headers: GZIP }

/** The Accept-Encoding the app received for a request without one (`query` keeps a cache from answering). */
export async function upstreamAcceptEncoding (send: (exchange: Exchange) => Promise<Received>,
  query: string): Promise<string | null> {
  const res = await send({ path: `/te?${query}` })
  return (JSON.parse(res.body.toString('utf8')) as { acceptEncoding: string | null }).acceptEncoding
}

export const SCENARIOS = {
  json: { exchange: () => ({ path: '/json', headers: GZIP }), content: JSON_BODY },
  'json without gzip': { exchange: () => ({ path: '/json' }), content: JSON_BODY },
  'json no-transform': { exchange: () => ({ path: '/nt/json', headers: GZIP }), content: JSON_BODY },
  stream: { exchange: () => ({ path: '/stream', headers: { ...GZIP, te: 'trailers' } }), content: STREAM_BODY },
  'stream no-transform': {
    exchange: () => ({ path: '/nt/stream', headers: { ...GZIP, te: 'trailers' } }), content: STREAM_BODY
  },
  file: { exchange: () => ({ path: '/files/data.json', headers: GZIP }), content: FILE_BODY },
  head: { exchange: () => ({ method: 'HEAD', path: '/json', headers: GZIP }), whole: JSON_BODY },
  'head file': { exchange: () => ({ method: 'HEAD', path: '/files/data.json', headers: GZIP }), whole: FILE_BODY },
  range: {
    exchange: () => ({ path: '/files/data.json', headers: { ...GZIP, range: `bytes=${RANGE.first}-${RANGE.last}` } }),
    whole: FILE_BODY
  },
  'not modified': {
    exchange: (c) => ({ path: '/files/data.json', headers: { ...GZIP, 'if-none-match': c.etag } }), whole: FILE_BODY
  },
  upload: {
    exchange: () => ({
      method: 'POST',
      path: '/upload',
      headers: { ...GZIP, 'content-type': 'application/json', 'content-digest': sfDigest(UPLOAD_BODY) },
      body: UPLOAD_BODY
    }),
    json: { verified: true }
  },
  'upload, wrong digest': {
    exchange: () => ({
      method: 'POST',
      path: '/upload',
      headers: { ...GZIP, 'content-type': 'application/json', 'content-digest': sfDigest(OTHER_BYTES) },
      body: UPLOAD_BODY
    }),
    // Problem details (RFC 9457) of draft-ietf-httpapi-digest-fields-problem-types.
    json: { type: 'https://iana.org/assignments/http-problem-types#digest-mismatched-values', status: 400 }
  },
  control: { exchange: () => ({ path: '/control', headers: GZIP }), content: JSON_BODY }
} satisfies Record<string, Scenario>

export type ScenarioName = keyof typeof SCENARIOS

/** What one scenario gives: status, content coding, the three verdicts, the digest fields in trailers. */
export interface Outcome {
  status: number
  coding: string
  /** The verdicts of content-digest, repr-digest and unencoded-digest, in that order, space-separated. */
  fields: string
  /** Digest fields that came as trailers, space-separated; '' for none. */
  trailers: string
}

/** An outcome written `'200 gzip | wrong right right'`, with `| trailers: …` when any came as trailers. */
export function outcome (text: string): Outcome {
  const [head, fields, trailers] = text.split('|').map((part) => part.trim()) as [string, string, string?]
  const [status, coding] = head.split(' ') as [string, string]
  return { status: Number(status), coding, fields, trailers: trailers?.replace(/^trailers:\s*/, '') ?? '' }
}

/**
 * Per scenario: its outcome, or per protocol where they differ, or a list of
 * the outcomes that occur (where the proxy's choice depends on timing).
 */
export type Table = Record<ScenarioName, string | { h1: string, h2: string } | readonly string[]>

function observed (res: Received, scenario: Scenario): Outcome {
  const verdicts = checkFields(res, scenario.whole)
  return {
    status: res.status,
    coding: single(res.headers['content-encoding']) ?? 'identity',
    fields: FIELDS.map((field) => verdicts[field]).join(' '),
    trailers: trailerFields(res)
  }
}

/** A proxy that passes the app's compressed bytes through: every field right (a 304 carries none). */
export const GZIP_IN_APP_RIGHT = {
  json: '200 gzip | right right right',
  'json without gzip': '200 identity | right right right',
  'json no-transform': '200 gzip | right right right',
  stream: '200 gzip | right right right',
  'stream no-transform': '200 gzip | right right right',
  file: '200 gzip | right right right',
  head: '200 identity | right right right',
  'head file': '200 gzip | right right right',
  range: '206 identity | right right right',
  'not modified': '304 gzip | absent absent absent',
  upload: '201 identity | right right right',
  'upload, wrong digest': '400 identity | right right right',
  control: '200 gzip | wrong wrong wrong'
} as const

/** The same through a proxy that forwards `TE: trailers` and the app's trailers: a stream's digests come as trailers. */
export const GZIP_IN_APP_RIGHT_TRAILERS = {
  ...GZIP_IN_APP_RIGHT,
  stream: '200 gzip | right right right | trailers: content-digest repr-digest unencoded-digest',
  'stream no-transform': '200 gzip | right right right | trailers: content-digest repr-digest unencoded-digest'
} as const

export interface ProxyConfig {
  /** The name of the configuration in the test output and the docs. */
  name: string
  /** Whether the app compresses (@fastify/compress). */
  compressInApp: boolean
  /** Plugin options on top of deploymentApp's. */
  pluginOptions?: FastifyDigestFieldsOptions
  /** The proxy's configuration text for its place. */
  config: (place: ProxyPlace) => string
  /** Outcome per scenario (`outcome()` syntax), or per protocol where they differ. */
  table: Table
  /** The TE field the app received when the client sent `TE: trailers` (null: none). */
  te: string | null
  /**
   * What the client received of a trailer the app sends unasked (`/app-trailer`):
   * 'trailer', 'announced only' (the `Trailer` header without the trailer), 'absent',
   * or 'cut off' (the response failed or ended short of the app's body); per
   * protocol where they differ, a list where the proxy's outcome depends on timing.
   */
  appTrailer: AppTrailer | { h1: AppTrailer | readonly AppTrailer[], h2: AppTrailer | readonly AppTrailer[] }
  /** Whether a gzip JSON response's Vary names Accept-Encoding (it always names the Want-* fields). */
  varyAcceptEncoding: boolean
  /** More checks, per protocol, after the table's. */
  also?: (t: Test, send: (exchange: Exchange) => Promise<Received>) => Promise<void>
}

/** HTTP/2 goes to the second port for nginx and HAProxy (a listener of its own), to the same port for Caddy and Varnish. */
function h2origin (proxy: RunningProxy): string {
  return proxy.kind === 'nginx' || proxy.kind === 'haproxy' ? proxy.h2origin : proxy.origin
}

type AppTrailer = 'trailer' | 'announced only' | 'absent' | 'cut off'

async function trailerOutcome (send: (exchange: Exchange) => Promise<Received>): Promise<AppTrailer> {
  const res = await send({ path: '/app-trailer', headers: { te: 'trailers' } }).catch(() => null)
  if (res === null || !res.body.equals(STREAM_BODY)) return 'cut off'
  if (res.trailers['content-digest'] !== undefined) return 'trailer'
  return res.headers.trailer === undefined ? 'absent' : 'announced only'
}

async function scenarios (t: Test, config: ProxyConfig, protocol: Protocol,
  send: (exchange: Exchange) => Promise<Received>): Promise<void> {
  // The file's ETag as the app sends it, for the 304.
  const first = await send({ path: '/files/data.json' })
  t.equal(first.status, 200)
  const context: ScenarioContext = { etag: single(first.headers.etag) ?? '' }
  for (const [name, scenario] of Object.entries(SCENARIOS) as Array<[ScenarioName, Scenario]>) {
    const res = await send(scenario.exchange(context))
    const row = config.table[name]
    const got = observed(res, scenario)
    if (Array.isArray(row)) {
      t.ok(row.map(outcome).some((one) => JSON.stringify(one) === JSON.stringify(got)), `${name}: one of ${row.join('; ')}`,
        { got })
    } else {
      t.same(got, outcome(typeof row === 'string' ? row : (row as { h1: string, h2: string })[protocol]), name)
    }
    if (scenario.json !== undefined) t.match(JSON.parse(decoded(res).toString('utf8')), scenario.json, `${name}: the body`)
    // A scenario with `content` is a full response (a 200 in every table, asserted above).
    if (scenario.content !== undefined) {
      t.ok(decoded(res).equals(scenario.content), `${name}: the decoded content is the app's`)
    }
  }
}

async function hopByHop (t: Test, config: ProxyConfig, protocol: Protocol,
  send: (exchange: Exchange) => Promise<Received>): Promise<void> {
  const vary = (single((await send({ path: '/json', headers: GZIP })).headers.vary) ?? '').toLowerCase()
  t.match(vary, /want-content-digest.*want-repr-digest.*want-unencoded-digest/, 'Vary names the Want-* fields')
  t.equal(vary.includes('accept-encoding'), config.varyAcceptEncoding, 'Vary names Accept-Encoding')
  const te = JSON.parse((await send({ path: '/te', headers: { te: 'trailers' } })).body.toString()) as { te: string | null }
  t.equal(te.te, config.te, 'the TE field at the app')
  const expected = typeof config.appTrailer === 'string' ? config.appTrailer : config.appTrailer[protocol]
  const got = await trailerOutcome(send)
  if (typeof expected === 'string') t.equal(got, expected, 'a trailer the app sends unasked')
  else t.ok(expected.includes(got), `a trailer the app sends unasked: one of ${expected.join(', ')}`, { got })
}

/**
 * Run every scenario through `kind` in configuration `config`, over HTTP/1.1
 * and HTTP/2, and compare each outcome with the table.
 */
export function proxyConfigTests (t: Test, kind: ProxyKind, config: ProxyConfig): void {
  t.test(config.name, async (t) => {
    const { port } = await deploymentApp(t, config.compressInApp, config.pluginOptions)
    const proxy = await startProxy(t, kind, port, config.config)
    const client = new RawClient(proxy.origin, h2origin(proxy))
    t.teardown(() => client.close())
    for (const protocol of ['h1', 'h2'] as const) {
      await t.test(protocol, async (t) => {
        const send = async (exchange: Exchange): Promise<Received> => await client.send(protocol, exchange)
        await scenarios(t, config, protocol, send)
        await hopByHop(t, config, protocol, send)
        if (config.also !== undefined) await config.also(t, send)
        if (t.passing() === false) t.comment(proxy.output())
      })
    }
  })
}
