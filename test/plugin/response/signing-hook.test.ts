// onDigestFields: called with a response's final digest fields, its fields
// added in the same section. Headers through inject (what it shows is what
// is sent); trailers over real HTTP/1.1 and HTTP/2 servers, where a cut-off
// response is seen as the client sees it. A signature recipe with
// http-message-signatures (RFC 9421): signed over @status, Content-Type,
// Content-Digest and the request's Content-Digest, verified by a client
// with the plugin's digest interceptor; a tampered body or a wrong signature
// is refused.
import { test } from 'tap'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest, createServer, type IncomingHttpHeaders } from 'node:http'
import { connect } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'
import { createSigner, httpbis } from 'http-message-signatures'
import type { DigestFieldValues, DigestFieldsHook } from '../../../types/index'
import { buildApp, decode, sf } from '../../helpers'
import { pipedTrailersLost } from '../../loaded-majors'
import { examplesDir, runClient, startExample } from '../../package/example-helpers'
import type { TapTest } from '../request/upload-helpers'

const BODY = 'signed content '.repeat(80)

/** A hook recording what it was called with, adding `x-seen` (the Content-Digest it saw). */
function recorder (): { hook: DigestFieldsHook, calls: DigestFieldValues[] } {
  const calls: DigestFieldValues[] = []
  return {
    calls,
    hook (_request, _reply, fields) {
      calls.push(fields)
      return { 'x-seen': fields['content-digest'] ?? 'none' }
    }
  }
}

test('options: a function, at registration or on a route; anything else refused', async (t) => {
  await t.rejects(buildApp(t, { onDigestFields: 'sign' as never }), { code: 'FST_DIGEST_INVALID_OPTION', message: /"onDigestFields": expected a function, got "sign"/ })
  const app = await buildApp(t, { contentDigest: true })
  t.throws(() => app.get('/x', { digest: { onDigestFields: {} as never } }, async () => 'x'), { code: 'FST_DIGEST_INVALID_ROUTE_OPTION', message: /onDigestFields: expected a function/ })
})

test('headers: called once with the final fields; its fields are sent with them; a route\'s hook replaces the plugin\'s', async (t) => {
  const plugin = recorder()
  const app = await buildApp(t, { contentDigest: true, unencodedDigest: true, onDigestFields: plugin.hook })
  app.get('/p', async () => BODY)
  app.get('/r', { digest: { onDigestFields: () => ({ 'x-route': 'yes', 'x-list': ['a=1', 'b=2'] }) } }, async () => BODY)
  // Another onSend hook on the route: the stages run apart (no shortcut).
  app.get('/s', { onSend: async (_req, _reply, payload) => payload }, async (_req, reply) => reply.type('text/plain').send(Readable.from([BODY])))
  const p = await app.inject({ url: '/p', headers: { 'want-repr-digest': 'sha-512=1', 'want-content-digest': 'sha-256=1' } })
  t.equal(p.headers['content-digest'], sf(BODY))
  t.equal(p.headers['x-seen'], sf(BODY))
  t.same(plugin.calls, [{ 'content-digest': sf(BODY), 'repr-digest': sf(BODY, 'sha-512'), 'unencoded-digest': sf(BODY) }])
  t.ok(Object.isFrozen(plugin.calls[0]))
  const r = await app.inject('/r')
  t.equal(r.headers['x-route'], 'yes')
  t.equal(r.headers['x-list'], 'a=1, b=2', 'a list: one comma-separated value')
  t.equal(r.headers['x-seen'], undefined)
  t.equal(plugin.calls.length, 1, 'the route\'s hook only')
  const s = await app.inject('/s')
  t.equal(s.body, BODY)
  t.equal(s.headers['x-seen'], sf(BODY), 'a stream buffered into headers')
  // The shortcut of the usual response, and a 404 (the instance hook).
  const missing = await app.inject('/nowhere')
  t.equal(missing.statusCode, 404)
  t.equal(missing.headers['x-seen'], sf(missing.rawPayload))
})

test('headers: an async hook; the hook is not called when no digest field is sent', async (t) => {
  const calls: string[] = []
  const app = await buildApp(t, {
    async onDigestFields (request, reply, fields) {
      calls.push(request.url)
      await new Promise((resolve) => setTimeout(resolve, 5))
      return { 'x-status': String(reply.statusCode), 'x-fields': Object.keys(fields).join(',') }
    }
  })
  app.get('/none', async () => BODY)
  app.get('/off', { digest: false }, async () => BODY)
  app.get('/no-content', { digest: { contentDigest: true } }, async (_req, reply) => reply.code(204).send())
  app.get('/wanted', async () => BODY)
  t.equal((await app.inject('/none')).headers['x-status'], undefined)
  t.equal((await app.inject('/off')).headers['x-status'], undefined)
  const noContent = await app.inject('/no-content')
  t.equal(noContent.statusCode, 204)
  t.equal(noContent.headers['x-status'], undefined, 'a 204 carries no digest field')
  t.same(calls, [])
  const wanted = await app.inject({ url: '/wanted', headers: { 'want-content-digest': 'sha-256=1' } })
  t.match(wanted.headers, { 'content-digest': sf(BODY), 'x-status': '200', 'x-fields': 'content-digest' })
  const head = await app.inject({ method: 'HEAD', url: '/wanted', headers: { 'want-content-digest': 'sha-256=1' } })
  t.match(head.headers, { 'content-digest': sf(''), 'x-fields': 'content-digest' }, 'HEAD: the fields it carries')
  t.same(calls, ['/wanted', '/wanted'])
})

test('headers: a 406 for a stale Repr-Digest is passed to the hook with the 406\'s fields', async (t) => {
  const { hook, calls } = recorder()
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, onDigestFields: hook })
  app.get('/doc', async () => BODY)
  const res = await app.inject({ url: '/doc', headers: { 'repr-digest': sf('an older version') } })
  t.equal(res.statusCode, 406)
  t.equal(res.headers['x-seen'], sf(res.rawPayload))
  t.same(calls, [{ 'content-digest': sf(res.rawPayload), 'repr-digest': sf(BODY) }])
})

test('headers: with @fastify/compress the hook sees the Content-Digest of the compressed bytes', async (t) => {
  const { hook, calls } = recorder()
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, onDigestFields: hook }, {}, async (app) => {
    await app.register(compress, { threshold: 100 })
  })
  app.get('/c', async (_req, reply) => reply.type('text/plain').send(BODY))
  const res = await app.inject({ url: '/c', headers: { 'accept-encoding': 'gzip' } })
  t.equal(res.headers['content-encoding'], 'gzip')
  t.equal(decode(res.rawPayload, 'gzip').toString(), BODY)
  t.equal(res.headers['x-seen'], sf(res.rawPayload))
  t.same(calls, [{ 'content-digest': sf(res.rawPayload), 'repr-digest': sf(BODY) }])
})

test('headers: a hook that throws, rejects or returns no fields: the error handler\'s answer, never the unsigned content', async (t) => {
  let mode = ''
  const hook: DigestFieldsHook = async (_request, reply) => {
    // The error's own response goes through the hook too: let it through.
    if (reply.statusCode >= 500) return undefined
    if (mode === 'throw') throw new Error('no key')
    if (mode === 'not an error') raise('no key')
    if (mode === 'not an object') return 'signature' as never
    if (mode === 'not a string') return { signature: 7 } as never
    if (mode === 'a digest') return { 'Content-Digest': 'sha-256=:AAAA:' }
    if (mode === 'a list of numbers') return { signature: [1] } as never
    return Promise.reject(new Error('signer down'))
  }
  const app = await buildApp(t, { contentDigest: true, onDigestFields: hook })
  app.get('/x', async () => BODY)
  const expected: Record<string, RegExp> = {
    // The hook is async: its throw is a rejection.
    throw: /^The onDigestFields hook failed: it rejected$/,
    reject: /^The onDigestFields hook failed: it rejected$/,
    'not an error': /failed: it rejected "no key"$/,
    'not an object': /expected an object of fields or nothing, got "signature"/,
    'not a string': /expected the value of signature to be a string or a list of strings, got number/,
    'a digest': /Content-Digest is a digest field/,
    'a list of numbers': /a list of strings, got an array/
  }
  for (const [m, message] of Object.entries(expected)) {
    mode = m
    const res = await app.inject('/x')
    t.equal(res.statusCode, 500, m)
    t.not(res.body, BODY)
    t.match(res.json(), { code: 'FST_DIGEST_FIELD_HOOK_FAILED', message }, m)
    t.equal(res.headers['content-digest'], sf(res.rawPayload), 'the 500 carries its own digest')
  }

  // A synchronous throw reaches the user's error handler, the cause attached.
  const own = await buildApp(t, { contentDigest: true, onDigestFields: (_request, reply) => { if (reply.statusCode === 200) throw new Error('sync') } })
  own.setErrorHandler((err: Error & { code?: string }, _request, reply) => reply.code(503).send({ handled: err.code, cause: (err.cause as Error).message }))
  own.get('/x', async () => BODY)
  const res = await own.inject('/x')
  t.equal(res.statusCode, 503)
  t.same(res.json(), { handled: 'FST_DIGEST_FIELD_HOOK_FAILED', cause: 'sync' })

  // A hook that always fails: fastify's last-resort 500, with no digest.
  const always = await buildApp(t, { contentDigest: true, onDigestFields: () => { throw new Error('always') } })
  always.get('/x', async () => BODY)
  const last = await always.inject('/x')
  t.equal(last.statusCode, 500)
  t.not(last.body, BODY)
  t.equal(last.headers['content-digest'], undefined)
})

/** Throw `value`, whatever it is (a hook may throw anything). */
function raise (value: unknown): never {
  throw value
}

interface Received { status: number, headers: IncomingHttpHeaders, trailers: Record<string, string | undefined>, body: Buffer, complete: boolean }

function h1Get (port: number, path: string): Promise<Received> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { te: 'trailers' }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', () => {})
      res.on('close', () => resolve({ status: res.statusCode as number, headers: res.headers, trailers: res.trailers, body: Buffer.concat(chunks), complete: res.complete }))
    })
    req.on('error', reject)
    req.end()
  })
}

function h2Get (t: TapTest, port: number, path: string): Promise<Received> {
  const session = connect(`http://127.0.0.1:${port}`)
  t.teardown(() => session.destroy())
  return new Promise((resolve) => {
    const out: Received = { status: 0, headers: {}, trailers: {}, body: Buffer.alloc(0), complete: false }
    const chunks: Buffer[] = []
    const stream = session.request({ ':path': path, te: 'trailers' })
    stream.on('response', (headers) => {
      out.status = headers[':status'] as number
      out.headers = headers as IncomingHttpHeaders
    })
    stream.on('trailers', (trailers) => { out.trailers = Object.fromEntries(Object.entries(trailers)) as Record<string, string> })
    stream.on('data', (c: Buffer) => chunks.push(c))
    stream.on('end', () => { out.complete = true })
    stream.on('error', () => {})
    stream.on('close', () => {
      out.body = Buffer.concat(chunks)
      out.complete = out.complete && stream.rstCode === 0
      resolve(out)
    })
  })
}

async function listening (t: TapTest, http2: boolean, hook: DigestFieldsHook, logs: string[]): Promise<FastifyInstance> {
  const stream = { write (line: string) { logs.push(line) } }
  const app = await buildApp(t, { contentDigest: true, reprDigest: ['sha-512'], onDigestFields: hook }, { http2, forceCloseConnections: true, logger: { level: 'error', stream } } as object)
  app.get('/s', async (_req, reply) => reply.type('text/plain').send(Readable.from([BODY.slice(0, 100), BODY.slice(100)])))
  app.get('/fail', async (_req, reply) => reply.type('text/plain').send(Readable.from([BODY])))
  app.get('/empty', { digest: { contentDigest: false, reprDigest: false } }, async (_req, reply) => reply.type('text/plain').send(Readable.from([BODY])))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

for (const http2 of [false, true]) {
  const name = http2 ? 'HTTP/2' : 'HTTP/1.1'
  test(`trailers (${name}): the hook runs once they are known; its fields go out as trailers, unannounced`, async (t) => {
    const calls: DigestFieldValues[] = []
    const logs: string[] = []
    const app = await listening(t, http2, (request, _reply, fields) => {
      calls.push(fields)
      if (request.url === '/fail?sync') throw new Error('no key')
      if (request.url === '/fail?invalid') return { signature: 1 } as never
      return new Promise((resolve, reject) => setTimeout(() => {
        if (request.url === '/fail') reject(new Error('no key'))
        else resolve({ signature: `sig1=:${fields['content-digest'] ?? ''}:` })
      }, 5))
    }, logs)
    const port = (app.server.address() as AddressInfo).port
    const get = (path: string): Promise<Received> => http2 ? h2Get(t, port, path) : h1Get(port, path)

    const res = await get('/s')
    t.equal(res.status, 200)
    t.equal(res.body.toString(), BODY)
    t.ok(res.complete)
    t.equal(res.headers.trailer, 'content-digest, repr-digest', 'the digests announced, the hook\'s field not')
    t.equal(res.headers.signature, undefined)
    t.same(res.trailers, { 'content-digest': sf(BODY), 'repr-digest': sf(BODY, 'sha-512'), signature: `sig1=:${sf(BODY)}:` }, { skip: pipedTrailersLost })
    t.same(calls, [{ 'content-digest': sf(BODY), 'repr-digest': sf(BODY, 'sha-512') }])

    // A hook that fails on the trailers (rejects, throws, returns no fields):
    // the content went out, the end does not.
    for (const path of ['/fail', '/fail?sync', '/fail?invalid']) {
      const cut = await get(path)
      t.equal(cut.status, 200)
      t.equal(cut.body.toString(), BODY)
      // A hook failing on a later tick: fastify 6.0.0-alpha.4's pipe has ended the response by then.
      const late = path === '/fail' ? pipedTrailersLost : false
      t.notOk(cut.complete, `${path}: cut off, no last chunk (HTTP/1.1), RST_STREAM (HTTP/2)`, { skip: late })
      t.equal(cut.trailers.signature, undefined)
    }
    t.equal(logs.filter((line) => /onDigestFields hook failed on the trailers/.test(line)).length, 3)
    t.match(logs.join(''), /FST_DIGEST_FIELD_HOOK_FAILED/)
    t.match(logs.join(''), /expected the value of signature to be a string/)

    // No digest field planned: no trailers, no call.
    const none = await get('/empty')
    t.ok(none.complete)
    t.equal(none.body.toString(), BODY)
    t.same(none.trailers, {})
    t.equal(calls.length, 4)
  })
}

test('trailers: a digest that turns out unknown is left out, and the hook sees the others', async (t) => {
  const { hook, calls } = recorder()
  const logs: string[] = []
  const stream = { write (line: string) { logs.push(line) } }
  const app = await buildApp(t, { contentDigest: true, reprDigest: true, onDigestFields: hook }, { forceCloseConnections: true, logger: { level: 'error', stream } } as object)
  // A 206 without a declared representation digest: Repr-Digest is unknown.
  app.get('/part', async (_req, reply) => reply.code(206).header('content-range', 'bytes 0-99/1200').type('text/plain').send(Readable.from([BODY.slice(0, 100)])))
  app.get('/repr-only', { digest: { contentDigest: false } }, async (_req, reply) => reply.code(206).header('content-range', 'bytes 0-99/1200').type('text/plain').send(Readable.from([BODY.slice(0, 100)])))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const res = await h1Get(port, '/part')
  t.equal(res.status, 206)
  t.ok(res.complete)
  t.same(res.trailers, { 'content-digest': sf(BODY.slice(0, 100)), 'x-seen': sf(BODY.slice(0, 100)) }, { skip: pipedTrailersLost })
  t.same(calls, [{ 'content-digest': sf(BODY.slice(0, 100)) }])
  // No digest known at the end: no digest trailer, and no call.
  const none = await h1Get(port, '/repr-only')
  t.equal(none.headers.trailer, 'repr-digest')
  t.ok(none.complete)
  t.same(none.trailers, {})
  t.equal(calls.length, 1)
})

// The signature recipe: FAPI 2.0 Message Signing's response signature.
const key = generateKeyPairSync('ed25519')
const stranger = generateKeyPairSync('ed25519')
const pem = (k: typeof key): { publicKey: string, privateKey: string } => ({
  publicKey: k.publicKey.export({ type: 'spki', format: 'pem' }) as string,
  privateKey: k.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
})

function keyFile (t: TapTest): string {
  const dir = mkdtempSync(join(tmpdir(), 'digest-signed-response-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'key.json')
  writeFileSync(file, JSON.stringify({ keyid: 'test-key', ...pem(key) }))
  return file
}

type SignedRequest = (url: string, opts: { method?: string, body?: string, publicKey: string }) => Promise<{ status: number, body: string }>

/**
 * A proxy replaying `target`'s answer to the same request, changed by
 * `change` (headers and body as received); with `requestBody`, the answer to
 * that request instead.
 */
async function replaying (
  t: TapTest, target: number, change: (headers: IncomingHttpHeaders, body: Buffer) => Buffer, requestBody?: Buffer
): Promise<number> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = requestBody ?? Buffer.concat(chunks)
      const headers = requestBody === undefined ? req.headers : { ...req.headers, 'content-digest': sf(requestBody), 'content-length': String(requestBody.byteLength) }
      const upstream = httpRequest({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers, agent: false }, (answer) => {
        const got: Buffer[] = []
        answer.on('data', (c: Buffer) => got.push(c))
        answer.on('end', () => {
          const headers = { ...answer.headers }
          const body = change(headers, Buffer.concat(got))
          res.writeHead(answer.statusCode as number, headers)
          res.end(body)
        })
      })
      upstream.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  return (server.address() as AddressInfo).port
}

test('signed-response.mjs with verify-signed-response.mjs: signature and digest checked together', async (t) => {
  const env = { RESPONSE_KEY: keyFile(t) }
  const port = await startExample(t, 'signed-response.mjs', env)
  const out = await runClient('verify-signed-response.mjs', [`http://127.0.0.1:${port}`], env)
  t.match(out, 'POST /payments 201 {"id":"pay-1","amount":42,"status":"accepted"}')
  t.match(out, 'GET /payments/pay-1 200 {"id":"pay-1","status":"settled"}')

  const { signedRequest } = await import(pathToFileURL(join(examplesDir, 'verify-signed-response.mjs')).href) as { signedRequest: SignedRequest }
  const publicKey = pem(key).publicKey
  const post = { method: 'POST', body: JSON.stringify({ amount: 7 }), publicKey }
  t.same(await signedRequest(`http://127.0.0.1:${port}/payments`, post), { status: 201, body: '{"id":"pay-1","amount":7,"status":"accepted"}' })

  // The signature covers the request's Content-Digest: a response replayed
  // for another request does not verify.
  const other = await replaying(t, port, (_headers, body) => body)
  t.same(await signedRequest(`http://127.0.0.1:${other}/payments`, post), { status: 201, body: '{"id":"pay-1","amount":7,"status":"accepted"}' }, 'replayed as is: verifies')
  // A tampered body under a valid signature: the digest check refuses it.
  const tampered = await replaying(t, port, (_headers, body) => Buffer.from(body.toString().replace('pay-1', 'pay-2')))
  await t.rejects(signedRequest(`http://127.0.0.1:${tampered}/payments`, post), { code: 'FST_DIGEST_RESPONSE_MISMATCH' })
  // A body and a Content-Digest replaced together: the signature refuses it.
  const resigned = await replaying(t, port, (headers, body) => {
    const changed = Buffer.from(body.toString().replace('pay-1', 'pay-2'))
    headers['content-digest'] = sf(changed)
    return changed
  })
  await t.rejects(signedRequest(`http://127.0.0.1:${resigned}/payments`, post), { message: 'the response signature does not verify' })
  // Signed with another key, or covering less.
  await t.rejects(signedRequest(`http://127.0.0.1:${port}/payments`, { ...post, publicKey: pem(stranger).publicKey }), { message: 'the response signature does not verify' })
  const less = await replaying(t, port, (headers, body) => {
    headers['signature-input'] = String(headers['signature-input']).replace(' "content-digest";req', '')
    return body
  })
  await t.rejects(signedRequest(`http://127.0.0.1:${less}/payments`, post), { message: 'the response signature does not cover content-digest;req' })
  // The answer to another request (its Content-Digest differs): refused.
  const substituted = await replaying(t, port, (_headers, body) => body, Buffer.from(JSON.stringify({ amount: 7000 })))
  await t.rejects(signedRequest(`http://127.0.0.1:${substituted}/payments`, post), { message: 'the response signature does not verify' })
})

test('the recipe in process: the digest interceptor and verifyMessage against a hook signing with the request\'s Content-Digest', async (t) => {
  const signer = createSigner(pem(key).privateKey, 'ed25519', 'k')
  const app = await buildApp(t, {
    contentDigest: true,
    async onDigestFields (request, reply, fields) {
      const signed = await httpbis.signMessage({ key: signer, name: 'sig1', fields: ['@status', 'content-type', 'content-digest', 'content-digest;req'] }, {
        status: reply.statusCode,
        headers: { 'content-type': String(reply.getHeader('content-type')), 'content-digest': fields['content-digest'] as string }
      }, { method: request.method, url: `http://${request.host}${request.url}`, headers: request.headers as Record<string, string> })
      const added = signed.headers as Record<string, string>
      return { 'signature-input': added['Signature-Input'] as string, signature: added.Signature as string }
    }
  })
  app.post('/echo', { digest: { verify: 'required' } }, async (request) => request.body)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { signedRequest } = await import(pathToFileURL(join(examplesDir, 'verify-signed-response.mjs')).href) as { signedRequest: (url: string, opts: object) => Promise<{ status: number, body: string }> }
  const port = (app.server.address() as AddressInfo).port
  // The example's own dispatcher (its Agent with the digest interceptor, verify: 'required'): under the compat
  // matrix, an ES module imported here may load another undici major than this file, and undici's request()
  // does not drive another major's Agent.
  t.same(await signedRequest(`http://127.0.0.1:${port}/echo`, { method: 'POST', body: '{"a":1}', publicKey: pem(key).publicKey }), { status: 200, body: '{"a":1}' })
})
