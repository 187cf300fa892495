// Property-based tests (fast-check, seeded and bounded) of the hooks through
// fastify.inject, and over a real server where inject cannot go (header size
// limits, raw latin1 bytes): random and mutated Content-Digest, Repr-Digest,
// Want-Content-Digest, Want-Repr-Digest and legacy Digest values, alone or as
// several field lines, never cause a 5xx, and each request gets the
// documented outcome: ignored, verified, or 400 application/problem+json
// with its problem type, the handler never running; each response carries
// exactly the algorithms the negotiation rules choose, with values
// recomputed from the bytes received.
import { test } from 'tap'
import { connect, type AddressInfo } from 'node:net'
import { once } from 'node:events'
import { Readable } from 'node:stream'
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib'
import fc from 'fast-check'
import compress from '@fastify/compress'
import type { FastifyInstance, FastifyServerOptions, InjectOptions, LightMyRequestResponse } from 'fastify'
import type { DigestAlgorithm, DigestMap, FastifyDigestFieldsOptions } from '../../types/index'
import {
  ALGORITHMS,
  computeDigest,
  parseDigestField,
  parseLegacyDigest,
  parseWantField,
  selectAlgorithms,
  verifyDigests
} from '../../lib/index'
import { buildApp } from '../helpers'
import { fetchRaw } from './hardening-helpers'

const SEED = 3230
const RUNS = 150
const KEYS = [...ALGORITHMS.keys()]
const DEFAULT: DigestAlgorithm[] = ['sha-256', 'sha-512']
const PROBLEM = 'https://iana.org/assignments/http-problem-types#'

interface Closeable { teardown (fn: () => unknown): void }

// ---------------------------------------------------------------------------
// Arbitraries

const SF_CHARS = [...'abcsh-256=:;,"()?*@%\\ \t.+/0123456789ABCDEFxyz', '\u00e9', '\u00ff', '\u0080']
const soup = fc.string({ unit: fc.constantFrom(...SF_CHARS), maxLength: 60 })
const latin1 = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength: 60 })
const sfKey = fc.stringMatching(/^[a-z*][a-z0-9_\-.*]{0,10}$/)
const b64 = (octets: Uint8Array): string => Buffer.from(octets).toString('base64')

/** Insert, delete or replace a few characters. */
function mutate (base: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...SF_CHARS))
  return fc.tuple(base, fc.array(edit, { minLength: 1, maxLength: 4 })).map(([text, edits]) => {
    let out = text
    for (const [at, op, ch] of edits) {
      const i = out.length === 0 ? 0 : at % (out.length + 1)
      if (op === 'insert') out = out.slice(0, i) + ch + out.slice(i)
      else if (op === 'delete') out = out.slice(0, i) + out.slice(i + 1)
      else out = out.slice(0, i) + ch + out.slice(i + 1)
    }
    return out
  })
}

/** As a header value: one line, or several field lines (inject sends an array as repeated lines). */
function lines (text: fc.Arbitrary<string>): fc.Arbitrary<string | string[]> {
  return fc.oneof({ arbitrary: text, weight: 5 }, { arbitrary: fc.array(text, { minLength: 1, maxLength: 3 }), weight: 1 })
}

/** Members of a digest field about `body`: right, wrong, of the wrong length, unknown, malformed. */
function digestMember (body: Buffer): fc.Arbitrary<string> {
  const alg = fc.constantFrom(...KEYS)
  return fc.oneof(
    { arbitrary: alg.map((a) => `${a}=:${b64(computeDigest(a, body))}:`), weight: 4 },
    { arbitrary: fc.constantFrom('unixsum', 'unixcksum').map((a) => `${a}=${computeDigest(a, body).readUIntBE(0, a === 'unixsum' ? 2 : 4)}`), weight: 1 },
    { arbitrary: alg.chain((a) => fc.uint8Array({ minLength: ALGORITHMS.get(a)?.length, maxLength: ALGORITHMS.get(a)?.length }).map((o) => `${a}=:${b64(o)}:`)), weight: 2 },
    { arbitrary: fc.tuple(alg, fc.uint8Array({ maxLength: 70 })).map(([a, o]) => `${a}=:${b64(o)}:`), weight: 1 },
    { arbitrary: fc.tuple(sfKey, fc.uint8Array({ maxLength: 40 })).map(([k, o]) => `${k}=:${b64(o)}:`), weight: 1 },
    { arbitrary: fc.tuple(alg, fc.constantFrom('1', '?1', '"x"', 'tok', '(:AA==:)', '1.5')).map(([a, v]) => `${a}=${v}`), weight: 1 },
    { arbitrary: fc.tuple(sfKey, fc.constantFrom('1', '?1', '"x"', 'tok')).map(([k, v]) => `${k}=${v}`), weight: 1 }
  )
}

function digestField (body: Buffer): fc.Arbitrary<string | string[]> {
  const valid = fc.array(digestMember(body), { minLength: 1, maxLength: 4 }).map((ms) => ms.join(', '))
  return lines(fc.oneof({ arbitrary: valid, weight: 12 }, { arbitrary: mutate(valid), weight: 2 }, { arbitrary: soup, weight: 1 }, { arbitrary: latin1, weight: 1 }))
}

function legacyField (body: Buffer): fc.Arbitrary<string> {
  const name: Record<string, string> = { 'sha-256': 'SHA-256', 'sha-512': 'sha-512', md5: 'MD5', sha: 'SHA' }
  const member = fc.oneof(
    fc.constantFrom('sha-256', 'sha-512', 'md5', 'sha').map((a) => `${name[a]}=${b64(computeDigest(a as DigestAlgorithm, body))}`),
    fc.tuple(fc.constantFrom('SHA-256', 'MD5', 'UNIXSUM', 'ADLER32', 'x'), fc.oneof(soup, fc.uint8Array({ maxLength: 40 }).map(b64))).map(([k, v]) => `${k}=${v}`)
  )
  return fc.oneof(fc.array(member, { minLength: 1, maxLength: 3 }).map((ms) => ms.join(',')), soup, latin1)
}

const wantValid = fc.array(fc.tuple(fc.oneof(fc.constantFrom(...KEYS), sfKey), fc.integer({ min: 0, max: 10 })), { minLength: 1, maxLength: 6 })
  .map((ms) => ms.map(([k, w]) => `${k}=${w}`).join(', '))
const wantField = lines(fc.oneof(
  { arbitrary: wantValid, weight: 5 },
  { arbitrary: mutate(wantValid), weight: 2 },
  { arbitrary: fc.tuple(wantValid, fc.constantFrom('11', '-1', '1.5', '?1', '"3"', '999999999999999', '9999999999999999')).map(([w, bad]) => `${w}, sha-256=${bad}`), weight: 1 },
  { arbitrary: soup, weight: 1 },
  { arbitrary: latin1, weight: 1 }
))

/**
 * A field value as the server receives it: several field lines joined with
 * ", " (RFC 9110 §5.3), as node does, empty lines included (so a trailing
 * empty line leaves a trailing comma, a syntax error in a Structured Field).
 */
function received (value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value
}

/** Headers inject can send; a value node would refuse to send is skipped. */
async function inject (app: FastifyInstance, opts: InjectOptions): Promise<LightMyRequestResponse | null> {
  try {
    return await app.inject(opts)
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'ERR_INVALID_CHAR' || code === 'ERR_HTTP_INVALID_HEADER_VALUE') return null
    throw err
  }
}

// ---------------------------------------------------------------------------
// Request verification

interface Expected { status: number, code?: string, type?: string, verified?: boolean }

/**
 * The documented outcome of a request with these fields and content
 * (README, "Requests"): a malformed field is refused; a value
 * of the wrong length, then a mismatch, is refused; under `verify:
 * 'required'` content needs a verified field; otherwise the handler runs.
 */
function expectedVerification (
  headers: Record<string, string | string[] | undefined>, body: Buffer, algorithms: DigestAlgorithm[], required: boolean
): Expected {
  const claims: Array<['Content-Digest' | 'Repr-Digest' | 'Digest', DigestMap]> = []
  try {
    const repr = parseDigestField(received(headers['repr-digest']), 'Repr-Digest')
    const content = parseDigestField(received(headers['content-digest']), 'Content-Digest')
    if (repr !== null) claims.push(['Repr-Digest', repr])
    if (content !== null) claims.push(['Content-Digest', content])
  } catch {
    return { status: 400, code: 'FST_DIGEST_INVALID_FIELD', type: 'about:blank' }
  }
  const legacy = parseLegacyDigest(received(headers.digest))
  if (legacy !== null) claims.push(['Digest', legacy])
  const computed = new Map(algorithms.map((a) => [a, computeDigest(a, body)]))
  const results = claims.map(([field, received]) => verifyDigests(field, received, computed, algorithms))
  const outcomes = results.flatMap((r) => r.results.map((x) => x.outcome))
  if (outcomes.includes('invalid-length')) return { status: 400, code: 'FST_DIGEST_INVALID_VALUE', type: `${PROBLEM}digest-invalid-values` }
  if (outcomes.includes('mismatched')) return { status: 400, code: 'FST_DIGEST_MISMATCH', type: `${PROBLEM}digest-mismatched-values` }
  const verified = results.some((r) => r.ok)
  if (required && body.length > 0 && !verified) {
    return outcomes.includes('unsupported')
      ? { status: 400, code: 'FST_DIGEST_UNSUPPORTED_ALGORITHM', type: `${PROBLEM}digest-unsupported-algorithms` }
      : { status: 400, code: 'FST_DIGEST_MISSING', type: 'about:blank' }
  }
  return { status: 200, verified }
}

async function verifyApp (t: Closeable, opts: FastifyDigestFieldsOptions, serverOpts: FastifyServerOptions = {}) {
  const app = await buildApp(t, opts, serverOpts)
  const ran: string[] = []
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.addContentTypeParser('application/x-stream', (_req, payload, done) => done(null, payload))
  app.post('/parsed', async (request) => {
    ran.push(request.id)
    return { bytes: (request.body as Buffer | undefined)?.length ?? 0, verification: request.digestVerification }
  })
  app.post('/stream', async (request) => {
    let bytes = 0
    try {
      for await (const chunk of request.body as Readable) bytes += (chunk as Buffer).length
    } catch (err) {
      // The stream errors instead of ending: the handler saw no complete body.
      ran.push(`error ${request.id}`)
      throw err
    }
    ran.push(request.id)
    return { bytes, verification: request.digestVerification }
  })
  return { app, ran }
}

for (const [name, opts] of [
  ['default algorithms', { legacyDigest: true }],
  ['every algorithm, verify: required', { legacyDigest: true, algorithms: KEYS, verify: 'required' }]
] as Array<[string, FastifyDigestFieldsOptions]>) {
  test(`request fields, ${name}: verified, ignored, or 400 with its problem type; never a 5xx; the handler runs only when it passes`, async (t) => {
    const algorithms = (opts.algorithms ?? DEFAULT) as DigestAlgorithm[]
    const required = opts.verify === 'required'
    const { app, ran } = await verifyApp(t, opts)
    const tally: Record<string, number> = {}
    const sample = fc.uint8Array({ maxLength: 2048 }).map((b) => Buffer.from(b)).chain((body) => fc.record({
      body: fc.constant(body),
      route: fc.constantFrom('/parsed', '/stream'),
      headers: fc.record({
        'content-digest': digestField(body),
        'repr-digest': digestField(body),
        digest: legacyField(body)
      }, { requiredKeys: [] })
    }))
    await fc.assert(fc.asyncProperty(sample, async ({ body, route, headers }) => {
      const type = route === '/parsed' ? 'application/octet-stream' : 'application/x-stream'
      const before = ran.length
      const res = await inject(app, { method: 'POST', url: route, headers: { ...headers, 'content-type': type }, payload: body })
      if (res === null) return
      const handled = ran.slice(before)
      const expected = expectedVerification(headers, body, algorithms, required)
      const key = `${expected.status} ${expected.code ?? (expected.verified === true ? 'verified' : 'unverified')}`
      tally[key] = (tally[key] ?? 0) + 1
      if (res.statusCode !== expected.status) throw new Error(`${res.statusCode} instead of ${expected.status}: ${res.body}`)
      if (expected.status === 400) {
        const problem = res.json()
        if (res.headers['content-type'] !== 'application/problem+json') throw new Error('not problem details')
        if (problem.code !== expected.code || problem.type !== expected.type || problem.status !== 400) throw new Error(res.body)
        if (typeof res.headers['want-content-digest'] !== 'string') throw new Error('no Want-Content-Digest on a refusal')
        if (handled.some((r) => !r.startsWith('error'))) throw new Error('the handler saw a body as complete')
      } else {
        const { bytes, verification } = res.json()
        if (bytes !== body.length || verification.verified !== expected.verified) throw new Error(res.body)
      }
    }), { seed: SEED, numRuns: RUNS * 2 })
    t.ok(Object.keys(tally).length >= (required ? 5 : 4), `outcomes seen: ${JSON.stringify(tally)}`)
  })
}

test('request fields with random Content-Encoding and Trailer values: 200, 400, 413 or 415, never a 5xx', async (t) => {
  const { app } = await verifyApp(t, { legacyDigest: true }, { bodyLimit: 4096 })
  const coding = fc.oneof(fc.constantFrom('gzip', 'x-gzip', 'deflate', 'br', 'identity', 'gzip, br', 'GZIP', 'compress', ''), soup, latin1)
  const trailer = fc.oneof(fc.constantFrom('Content-Digest', 'repr-digest, digest', 'x'), soup)
  const sample = fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)).chain((body) => fc.record({
    body: fc.constant(body),
    route: fc.constantFrom('/parsed', '/stream'),
    headers: fc.record({
      'content-encoding': coding,
      trailer,
      'content-digest': digestField(body),
      'repr-digest': digestField(body)
    }, { requiredKeys: [] })
  }))
  const statuses = new Set<number>()
  await fc.assert(fc.asyncProperty(sample, async ({ body, route, headers }) => {
    const type = route === '/parsed' ? 'application/octet-stream' : 'application/x-stream'
    const res = await inject(app, { method: 'POST', url: route, headers: { ...headers, 'content-type': type }, payload: body })
    if (res === null) return
    statuses.add(res.statusCode)
    if (![200, 400, 413, 415].includes(res.statusCode)) throw new Error(`${res.statusCode}: ${res.body}`)
    if (res.statusCode !== 200 && res.headers['content-type'] !== 'application/problem+json') throw new Error(res.body)
  }), { seed: SEED, numRuns: RUNS })
  t.ok(statuses.has(200) && statuses.has(400), `statuses: ${[...statuses].join(', ')}`)
})

// ---------------------------------------------------------------------------
// Response digests and negotiation

function decode (body: Buffer, encoding: unknown): Buffer {
  if (encoding === 'gzip') return gunzipSync(body)
  if (encoding === 'br') return brotliDecompressSync(body)
  if (encoding === 'deflate') return inflateSync(body)
  return body
}

/** The algorithms and values of a response field, checked against `bytes`. */
function fieldAlgorithms (value: unknown, bytes: Buffer, where: string): string[] {
  if (value === undefined) return []
  const parsed = parseDigestField(value as string) as DigestMap
  for (const [a, octets] of parsed) {
    if (!octets.equals(computeDigest(a as DigestAlgorithm, bytes))) throw new Error(`${where}: ${a} is not the digest of the bytes`)
  }
  return [...parsed.keys()]
}

/** The conditional of docs/design.md ("The 406 rule"): does the request's Repr-Digest name another representation? */
function stale (value: string | string[] | undefined, algorithms: DigestAlgorithm[], representation: Buffer): boolean {
  let parsed: DigestMap | null
  try {
    parsed = parseDigestField(value, 'Repr-Digest')
  } catch {
    return false
  }
  return algorithms.some((a) => parsed?.has(a) === true && !(parsed.get(a) as Buffer).equals(computeDigest(a, representation)))
}

for (const [name, opts] of [
  ['default algorithms, nothing unsolicited', {}],
  ['every algorithm, both fields unsolicited', { algorithms: KEYS, contentDigest: ['sha-512', 'crc32c'], reprDigest: true }]
] as Array<[string, FastifyDigestFieldsOptions]>) {
  test(`response fields, ${name}: the algorithms the rules choose, values of the bytes sent, 200 or 406, never a 5xx`, async (t) => {
    const algorithms = (opts.algorithms ?? DEFAULT) as DigestAlgorithm[]
    const configured = (value: FastifyDigestFieldsOptions['contentDigest']): DigestAlgorithm[] =>
      value === true ? [algorithms[0] as DigestAlgorithm] : Array.isArray(value) ? value : []
    const app = await buildApp(t, opts, {}, async (app) => { await app.register(compress, { threshold: 0 }) })
    const text = JSON.stringify({ items: Array.from({ length: 40 }, (_, i) => ({ i, name: `item ${i}` })) })
    app.get('/item', async (_request, reply) => reply.type('application/json').send(text))
    app.get('/stream', async (_request, reply) => reply.type('application/json').send(Readable.from([text.slice(0, 100), text.slice(100)])))
    const representation = Buffer.from(text)
    const conditional = fc.oneof(
      fc.constantFrom(...algorithms).map((a) => `${a}=:${b64(computeDigest(a, representation))}:`),
      digestField(Buffer.from('another representation'))
    )
    const sample = fc.record({
      method: fc.constantFrom('GET', 'HEAD'),
      url: fc.constantFrom('/item', '/stream'),
      headers: fc.record({
        'want-content-digest': wantField,
        'want-repr-digest': wantField,
        'accept-encoding': fc.oneof(fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'gzip;q=0, br', '*'), soup),
        te: fc.oneof(fc.constant('trailers'), soup),
        'repr-digest': conditional
      }, { requiredKeys: [] })
    })
    let withDigests = 0
    let notAcceptable = 0
    await fc.assert(fc.asyncProperty(sample, async ({ method, url, headers }) => {
      const res = await inject(app, { method, url, headers })
      if (res === null) return
      const where = `${method} ${url} ${JSON.stringify(headers)}`
      if (!String(res.headers.vary).includes('Want-Content-Digest, Want-Repr-Digest')) throw new Error(`${where}: Vary`)
      if (stale(received(headers['repr-digest']), algorithms, representation)) {
        if (res.statusCode !== 406) throw new Error(`${where}: ${res.statusCode} for a stale Repr-Digest`)
        notAcceptable++
        fieldAlgorithms(res.headers['repr-digest'], representation, where)
        return
      }
      if (res.statusCode !== 200) throw new Error(`${where}: ${res.statusCode}`)
      const wantContent = parseWantField(received(headers['want-content-digest']))
      const wantRepr = parseWantField(received(headers['want-repr-digest']))
      // A field without a Want-* of its own follows the other field's when it is sent unsolicited (design.md, "Negotiation").
      const contentUnsolicited = configured(opts.contentDigest)
      const reprUnsolicited = configured(opts.reprDigest)
      const contentWant = wantContent ?? (contentUnsolicited.length > 0 ? wantRepr : null)
      const reprWant = wantRepr ?? (reprUnsolicited.length > 0 ? wantContent : null)
      const contentAlgs = selectAlgorithms({ algorithms, want: contentWant, unsolicited: contentUnsolicited })
      const reprAlgs = selectAlgorithms({ algorithms, want: reprWant, unsolicited: reprUnsolicited })
      const content = method === 'HEAD' ? Buffer.alloc(0) : res.rawPayload
      const fields = { ...res.headers, ...res.trailers }
      const sentContent = fieldAlgorithms(fields['content-digest'], content, `${where} Content-Digest`)
      const sentRepr = fieldAlgorithms(fields['repr-digest'], method === 'HEAD' ? representation : decode(res.rawPayload, res.headers['content-encoding']), `${where} Repr-Digest`)
      if (sentContent.join() !== contentAlgs.join()) throw new Error(`${where}: Content-Digest ${sentContent} instead of ${contentAlgs}`)
      // A HEAD of a stream is hashed up to maxBufferSize: the same algorithms.
      if (sentRepr.join() !== reprAlgs.join()) throw new Error(`${where}: Repr-Digest ${sentRepr} instead of ${reprAlgs}`)
      if (sentContent.length + sentRepr.length > 0) withDigests++
    }), { seed: SEED, numRuns: RUNS * 2 })
    t.ok(withDigests > 20, `${withDigests} responses with digests checked`)
    t.ok(notAcceptable > 10, `${notAcceptable} stale Repr-Digest conditionals`)
  })
}

// ---------------------------------------------------------------------------
// Sizes and bytes inject cannot send

test('64 KiB field values and thousands of members through inject: the documented outcome', async (t) => {
  const { app, ran } = await verifyApp(t, { legacyDigest: true, contentDigest: true })
  app.get('/item', async () => 'item')
  const body = Buffer.from('content')
  const right = `sha-256=:${b64(computeDigest('sha-256', body))}:`
  const unknown = Array.from({ length: 4000 }, (_, i) => `x${i}=:AAAA:`).join(', ')
  const cases: Array<[string, Record<string, string | string[]>, number, string?]> = [
    ['thousands of unknown members and one right one', { 'content-digest': `${unknown}, ${right}` }, 200],
    ['thousands of field lines', { 'content-digest': [...Array.from({ length: 3000 }, () => 'x=:AAAA:'), right] }, 200],
    ['a 64 KiB Byte Sequence for sha-256', { 'content-digest': `sha-256=:${Buffer.alloc(48 * 1024).toString('base64')}:` }, 400, 'FST_DIGEST_INVALID_VALUE'],
    ['a 64 KiB unknown member', { 'repr-digest': `x=:${Buffer.alloc(48 * 1024).toString('base64')}:, ${right}` }, 200],
    ['64 KiB of garbage', { 'content-digest': '('.repeat(65536) }, 400, 'FST_DIGEST_INVALID_FIELD'],
    ['a 64 KiB legacy Digest', { digest: `SHA-256=${'A'.repeat(65536)}` }, 400, 'FST_DIGEST_INVALID_VALUE'],
    ['a 64 KiB Want-* with thousands of members', { 'want-content-digest': Array.from({ length: 6000 }, (_, i) => `y${i}=10`).join(',') }, 200]
  ]
  for (const [label, headers, status, code] of cases) {
    const started = Date.now()
    const res = await app.inject({ method: 'POST', url: '/parsed', headers: { ...headers, 'content-type': 'application/octet-stream' }, payload: body })
    t.equal(res.statusCode, status, label)
    if (code !== undefined) t.equal(res.json().code, code, label)
    t.ok(Date.now() - started < 5000, `${label}: in bounded time`)
  }
  t.equal(ran.length, 4, 'the handler ran only for the requests that passed')
  const want = await app.inject({ url: '/item', headers: { 'want-content-digest': Array.from({ length: 6000 }, (_, i) => `y${i}=10`).join(',') + ', sha-512=1' } })
  t.equal(want.headers['content-digest'], `sha-512=:${b64(computeDigest('sha-512', want.rawPayload))}:`)
})

test('over a real server: 64 KiB header values with a raised maxHeaderSize, and Node\'s own 431 without', async (t) => {
  const { app } = await verifyApp(t, {}, { http: { maxHeaderSize: 256 * 1024 } } as FastifyServerOptions)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const body = Buffer.from('content')
  const right = `sha-256=:${b64(computeDigest('sha-256', body))}:`
  const big = Array.from({ length: 5000 }, (_, i) => `x${i}=:AAAA:`).join(', ') // about 64 KiB
  t.ok(big.length > 64 * 1024)
  const ok = await fetchRaw(port, { method: 'POST', path: '/parsed', headers: { 'content-type': 'application/octet-stream', 'content-digest': `${big}, ${right}`, 'want-repr-digest': big.replaceAll(':AAAA:', '3') }, body })
  t.equal(ok.status, 200)
  t.equal(JSON.parse(ok.body.toString()).verification.verified, true)
  const bad = await fetchRaw(port, { method: 'POST', path: '/parsed', headers: { 'content-type': 'application/octet-stream', 'content-digest': `${big}, sha-256=:AAAA:` }, body })
  t.equal(bad.status, 400)
  t.equal(JSON.parse(bad.body.toString()).code, 'FST_DIGEST_INVALID_VALUE')

  const { app: small } = await verifyApp(t, {})
  await small.listen({ port: 0, host: '127.0.0.1' })
  const tooBig = await fetchRaw((small.server.address() as AddressInfo).port, { method: 'POST', path: '/parsed', headers: { 'content-type': 'application/octet-stream', 'content-digest': big }, body })
  t.equal(tooBig.status, 431, 'node refuses it before the plugin sees it')
})

test('over a real server: latin1 bytes and duplicate field lines, as node receives them', async (t) => {
  const { app, ran } = await verifyApp(t, { legacyDigest: true })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const body = Buffer.from('content')
  const right = `sha-256=:${b64(computeDigest('sha-256', body))}:`
  const bytesOf = fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b) => Buffer.from(b.map((c) => c < 0x20 || c === 0x7f ? c + 0x80 : c)))
  const sample = fc.record({
    field: fc.constantFrom('Content-Digest', 'Repr-Digest', 'Want-Content-Digest', 'Want-Repr-Digest', 'Digest'),
    value: bytesOf,
    duplicate: fc.boolean()
  })
  const statuses = new Set<number>()
  await fc.assert(fc.asyncProperty(sample, async ({ field, value, duplicate }) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.write(Buffer.concat([
      Buffer.from(`POST /parsed HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: ${body.length}\r\n`),
      Buffer.from(`${field}: `), value, Buffer.from('\r\n'),
      Buffer.from(duplicate ? `${field}: ${right}\r\n` : ''),
      Buffer.from('\r\n'), body
    ]))
    await once(socket, 'close')
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'))?.[1])
    statuses.add(status)
    if (!(status === 200 || status === 400)) throw new Error(`${status} for ${field}: ${value.toString('hex')}`)
  }), { seed: SEED, numRuns: 60 })
  t.ok(statuses.has(200) && statuses.has(400), `statuses: ${[...statuses].join(', ')}`)
  t.ok(ran.length > 0)
})
