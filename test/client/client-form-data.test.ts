// FormData and Blob request bodies through the interceptor: hashed before the
// request goes out (a FormData serialized first, with the interceptor's own
// boundary), sent with that Content-Digest through undici.request,
// undici.stream and dispatcher.dispatch, over HTTP/1.1 and HTTP/2, to the
// server plugin with the real @fastify/multipart under verify: 'required',
// and to a node:http server that checks the bytes by hand. digestBody() gives
// fetch the same.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import { openAsBlob } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import Fastify, { type FastifyServerOptions } from 'fastify'
import multipart from '@fastify/multipart'
import { Agent, FormData as UndiciFormData, H2CClient, fetch, interceptors, request, type Dispatcher } from 'undici'
import digestFields = require('../../lib/index')
import { digestBody, digestInterceptor } from '../../lib/client/index'
import { formDataBlob, isFormData } from '../../lib/client/request-digest'
import { sf } from '../helpers'
import { assertFailure, call, digestAgent, listenLocal, type Outcome } from './client-helpers'
import type { TapTest } from '../plugin/request/upload-helpers'

type Closeable = { teardown (fn: () => unknown): void }

/** 200 KiB of bytes that are not all one value, so a wrong offset shows. */
const FILE = Buffer.from(Array.from({ length: 200 * 1024 }, (_, i) => (i * 7 + (i >> 9)) & 0xff))

function form (Ctor: typeof FormData = FormData): FormData {
  const fd = new Ctor()
  fd.append('title', 'a file')
  fd.append('note', 'two\nlines\r\nand a lone\rCR')
  fd.append('upload', new Blob([FILE], { type: 'application/x-test' }), 'data.bin')
  fd.append('bare', new Blob(['no type, no name']))
  return fd
}

interface Received { fields: Record<string, string>, files: Array<{ field: string, filename: string, mimetype: string, sha256: string }>, verification: { verified: boolean } }

async function pluginServer (t: Closeable, opts: FastifyServerOptions = {}): Promise<string> {
  const app = Fastify(opts)
  t.teardown(() => app.close())
  await app.register(digestFields, { verify: 'required' })
  await app.register(multipart)
  app.post('/form', async (request) => {
    const out: Received = { fields: {}, files: [], verification: { verified: false } }
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        const hash = createHash('sha256')
        for await (const chunk of part.file) hash.update(chunk as Buffer)
        out.files.push({ field: part.fieldname, filename: part.filename, mimetype: part.mimetype, sha256: hash.digest('hex') })
      } else {
        out.fields[part.fieldname] = String(part.value)
      }
    }
    out.verification = request.digestVerification as unknown as Received['verification']
    return out
  })
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.post('/blob', async (request) => ({
    type: request.headers['content-type'],
    length: (request.body as Buffer).length,
    verification: request.digestVerification
  }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')

function assertForm (t: TapTest, out: Outcome, label: string): void {
  t.equal(out.error, null, `${label}: ${String(out.error?.message)}`)
  t.equal(out.status, 200, label)
  const got = JSON.parse(out.body.toString()) as Received
  t.equal(got.verification.verified, true, `${label}: verified by the plugin`)
  t.same(got.fields, { title: 'a file', note: 'two\r\nlines\r\nand a lone\r\nCR' }, `${label}: line breaks sent as CRLF`)
  t.same(got.files, [
    { field: 'upload', filename: 'data.bin', mimetype: 'application/x-test', sha256: sha256(FILE) },
    { field: 'bare', filename: 'blob', mimetype: 'application/octet-stream', sha256: sha256(Buffer.from('no type, no name')) }
  ], `${label}: the files arrived whole`)
}

test('FormData through request and stream, HTTP/1.1 and HTTP/2, to the plugin and @fastify/multipart', async (t) => {
  const h1 = await pluginServer(t)
  const h2 = await pluginServer(t, { http2: true } as FastifyServerOptions)
  const h2client = new H2CClient(h2)
  t.teardown(() => h2client.close())
  const targets: Array<[string, string, Dispatcher]> = [
    ['HTTP/1.1', h1, digestAgent(t, { verify: 'required', want: 'sha-256' })],
    ['HTTP/2', h2, h2client.compose(digestInterceptor({ verify: 'required', want: 'sha-256' }))]
  ]
  for (const [transport, base, dispatcher] of targets) {
    for (const kind of ['request', 'stream'] as const) {
      for (const Ctor of [FormData, UndiciFormData as unknown as typeof FormData]) {
        const label = `${transport} ${kind} ${Ctor === FormData ? 'global' : 'undici'} FormData`
        assertForm(t, await call(kind, dispatcher, `${base}/form`, { method: 'POST', body: form(Ctor) as never }), label)
      }
    }
  }
})

test('FormData and Blob through a bare dispatcher.dispatch', async (t) => {
  const base = await pluginServer(t)
  const agent = new Agent()
  t.teardown(() => agent.close())
  const dispatcher = agent.compose(digestInterceptor({ verify: 'required', want: 'sha-256' }))
  const dispatchOnce = (path: string, body: unknown): Promise<Outcome> => new Promise((resolve) => {
    const out: Outcome = { status: 0, headers: {}, body: Buffer.alloc(0), trailers: {}, error: null }
    const chunks: Buffer[] = []
    dispatcher.dispatch({ origin: base, path, method: 'POST', body: body as never }, {
      onRequestStart () {},
      onResponseStart (_controller, statusCode) { out.status = statusCode },
      onResponseData (_controller, chunk) { chunks.push(chunk) },
      onResponseEnd () { resolve({ ...out, body: Buffer.concat(chunks) }) },
      onResponseError (_controller, err) { resolve({ ...out, error: err }) }
    } as Dispatcher.DispatchHandler)
  })
  assertForm(t, await dispatchOnce('/form', form()), 'dispatch FormData')
  const blob = await dispatchOnce('/blob', new Blob(['{"a":1}'], { type: 'application/x-test' }))
  t.equal(blob.error, null, String(blob.error?.message))
  t.match(JSON.parse(blob.body.toString()), { type: 'application/x-test', length: 7, verification: { verified: true } })
})

test('composed with undici\'s redirect interceptor (listed before it): a 307/308 resends the form with its digest; a bare 307 is followed under verify: \'required\'', async (t) => {
  const base = await pluginServer(t)
  // A server that is not the plugin answers the redirect: no digest on the 307 itself.
  const redirector = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(Number(req.url?.slice(1)), { location: `${base}/form` })
      res.end('moved')
    })
  })
  redirector.listen(0, '127.0.0.1')
  await once(redirector, 'listening')
  t.teardown(() => new Promise((resolve) => redirector.close(resolve)))
  const from = `http://127.0.0.1:${(redirector.address() as { port: number }).port}`
  const agent = new Agent()
  t.teardown(() => agent.close())
  // compose() wraps in order, the last listed outermost: the digest
  // interceptor sees the request once and only the final response, and the
  // redirect interceptor resends the serialized form with its headers.
  const dispatcher = agent.compose(interceptors.redirect({ maxRedirections: 2 }), digestInterceptor({ verify: 'required', want: 'sha-256' }))
  for (const status of [307, 308]) {
    assertForm(t, await call('request', dispatcher, `${from}/${status}`, { method: 'POST', body: form() as never }), `${status}`)
  }
})

test('a file-backed Blob (fs.openAsBlob) in a FormData and as the body; a changed file fails the request', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'digest-blob-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'data.bin')
  await writeFile(path, FILE)
  const base = await pluginServer(t)
  const dispatcher = digestAgent(t, { verify: 'required', algorithms: ['sha-512'], want: 'sha-512' })
  const fd = new FormData()
  fd.append('upload', await openAsBlob(path, { type: 'application/x-test' }), 'data.bin')
  const out = await call('request', dispatcher, `${base}/form`, { method: 'POST', body: fd as never })
  t.equal(out.error, null, String(out.error?.message))
  t.same((JSON.parse(out.body.toString()) as Received).files, [{ field: 'upload', filename: 'data.bin', mimetype: 'application/x-test', sha256: sha256(FILE) }])

  const blob = await call('request', dispatcher, `${base}/blob`, { method: 'POST', body: await openAsBlob(path, { type: 'application/x-test' }) as never })
  t.equal(blob.error, null, String(blob.error?.message))
  t.match(JSON.parse(blob.body.toString()), {
    type: 'application/x-test', // undici's, from the Blob's type
    length: FILE.length,
    verification: { verified: true, fields: [{ field: 'Content-Digest', results: [{ algorithm: 'sha-512' }] }] }
  })

  // A file-backed Blob cannot be read once its file changed: the hash fails,
  // and the request fails with that error before anything is sent.
  const stale = await openAsBlob(path)
  await writeFile(path, 'changed')
  const failed = await call('request', dispatcher, `${base}/blob`, { method: 'POST', body: stale as never })
  t.equal(failed.status, 0, 'no response')
  t.match(failed.error, { name: 'NotReadableError' })
})

test('a Blob body, and a FormData with a Content-Digest the caller gives (kept, and refused when wrong)', async (t) => {
  const base = await pluginServer(t)
  const dispatcher = digestAgent(t, { verify: 'required', want: 'sha-256' })
  const blob = await call('stream', dispatcher, `${base}/blob`, { method: 'POST', body: new Blob(['{"a":1}'], { type: 'application/json' }) as never })
  t.equal(blob.error, null, String(blob.error?.message))
  t.equal(blob.status, 200)
  // Sent as it is, so serialized by undici: undici's own FormData (on Node
  // 20, undici 7.30.2's extractBody does not recognize the global FormData
  // class, and its body stream then throws `action is not a function`).
  const given = await call('request', dispatcher, `${base}/form`, { method: 'POST', headers: { 'content-digest': sf('something else') }, body: form(UndiciFormData as unknown as typeof FormData) as never })
  assertFailure(t, given, 'FST_DIGEST_REQUEST_REJECTED', 'Content-Digest', 'sha-256')
})

test('a request aborted while its body is hashed is aborted by undici, and never sent', async (t) => {
  let requests = 0
  const server = createServer((req, res) => {
    requests++
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  const base = await listenLocal(t, server)
  const dispatcher = digestAgent(t)
  const big = new Blob([Buffer.alloc(16 * 1024 * 1024, 1)])
  const bigForm = new FormData()
  bigForm.append('file', big)
  for (const body of [big, bigForm]) {
    const controller = new AbortController()
    const pending = request(base, { dispatcher, method: 'POST', body: body as never, signal: controller.signal })
    controller.abort() // before the first chunk is hashed
    await t.rejects(pending, { name: 'AbortError' })
  }
  const after = await request(base, { dispatcher, method: 'POST', body: new Blob(['x']) as never })
  t.equal(await after.body.text(), 'ok')
  t.equal(requests, 1, 'only the second request reached the server')
})

/** A node:http server that answers with what it received: the body, its headers, and whether the Content-Digest matches (checked by hand). */
async function echoServer (t: Closeable): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const matches = req.headers['content-digest'] === `sha-256=:${createHash('sha256').update(body).digest('base64')}:`
      res.end(JSON.stringify({ type: req.headers['content-type'], length: req.headers['content-length'], digest: req.headers['content-digest'], matches, body: body.toString('latin1') }))
    })
  })
  return await listenLocal(t, server)
}

test('the bytes on the wire: the RFC 7578 form, its length, its digest (a server that is not the plugin)', async (t) => {
  const base = await echoServer(t)
  const dispatcher = digestAgent(t)
  const fd = new FormData()
  fd.append('say "hi"\n', 'x\ny')
  fd.append('f', new File(['abc'], 'a"b\r.txt', { type: 'text/plain' }))
  fd.append('empty', '')
  const out = await call('request', dispatcher, base, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: fd as never })
  t.equal(out.error, null, String(out.error?.message))
  const got = JSON.parse(out.body.toString()) as { type: string, length: string, digest: string, matches: boolean, body: string }
  const boundary = /^multipart\/form-data; boundary=(----fastify-digest-fields-[0-9a-f]{32})$/.exec(got.type)?.[1] as string
  t.ok(boundary, `the caller's Content-Type replaced by the form's: ${got.type}`)
  const expected = `--${boundary}\r\nContent-Disposition: form-data; name="say %22hi%22%0D%0A"\r\n\r\nx\r\ny\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a%22b%0D.txt"\r\nContent-Type: text/plain\r\n\r\nabc\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="empty"\r\n\r\n\r\n` +
    `--${boundary}--\r\n`
  t.equal(got.body, expected)
  t.equal(got.length, String(Buffer.byteLength(expected)), 'sent with its Content-Length')
  t.equal(got.matches, true, 'the digest is of the bytes sent')
  t.equal(got.digest, sf(expected))

  // An empty form is its closing delimiter.
  const empty = JSON.parse((await call('request', dispatcher, base, { method: 'POST', body: new FormData() as never })).body.toString()) as { body: string, matches: boolean }
  t.match(empty.body, /^------fastify-digest-fields-[0-9a-f]{32}--\r\n$/)
  t.equal(empty.matches, true)
})

test('formDataBlob(): a look-alike FormData, with an entry that is neither a string nor a Blob (sent as it is) or a Blob that is not a File', async (t) => {
  const fake = { [Symbol.toStringTag]: 'FormData', * entries () { yield ['n', 42] } }
  t.equal(isFormData(fake), true)
  t.equal(formDataBlob(fake as unknown as FormData), null)
  // A Blob that is not a File (FormData.append would have made it one) is named as append names it.
  const blobOnly = { [Symbol.toStringTag]: 'FormData', * entries () { yield ['n', new Blob(['x'])] } }
  t.match(await formDataBlob(blobOnly as unknown as FormData)?.text(), /name="n"; filename="blob"\r\nContent-Type: application\/octet-stream\r\n\r\nx\r\n/)
  t.equal(isFormData(null), false)
  t.equal(isFormData({ [Symbol.toStringTag]: 'FormData' }), false, 'no entries()')
  t.equal(isFormData('FormData'), false)
})

test('a dispatch error after the body was hashed reaches the handler (undici\'s dns interceptor throws on a bad origin)', async (t) => {
  const agent = new Agent()
  t.teardown(() => agent.close())
  const dispatcher = agent.compose(interceptors.dns(), digestInterceptor())
  const err = await new Promise<Error>((resolve) => {
    const accepted = dispatcher.dispatch({ origin: 'http://[not-an-origin', path: '/', method: 'POST', body: new Blob(['x']) as never }, {
      onRequestStart () {},
      onResponseStart () {},
      onResponseData () {},
      onResponseEnd () { resolve(new Error('ended')) },
      onResponseError (_controller, e) { resolve(e) }
    } as Dispatcher.DispatchHandler)
    t.equal(accepted, true, 'taken, to be hashed first')
  })
  t.match(err, { name: 'TypeError', code: 'ERR_INVALID_URL' })
})

test('digestBody(): fetch sends bytes, Blobs and FormData with their Content-Digest', async (t) => {
  const base = await pluginServer(t)
  const dispatcher = digestAgent(t, { verify: 'required', want: 'sha-256' })
  const sent = await digestBody(form())
  t.match(sent.headers, { 'content-digest': /^sha-256=:[A-Za-z0-9+/]+=*:$/, 'content-type': /^multipart\/form-data; boundary=/ })
  const res = await fetch(`${base}/form`, { dispatcher, method: 'POST', headers: sent.headers, body: sent.body as Blob })
  assertForm(t, { status: res.status, headers: {}, body: Buffer.from(await res.arrayBuffer()), trailers: {}, error: null }, 'fetch FormData')

  const blob = await digestBody(new Blob(['{"a":1}'], { type: 'application/x-test' }), ['sha-512', 'sha-256'])
  t.same(Object.keys(blob.headers), ['content-digest'], 'a Blob keeps its own type')
  t.match(blob.headers['content-digest'], /^sha-512=:.+:, sha-256=:.+:$/)
  const blobRes = await fetch(`${base}/blob`, { dispatcher, method: 'POST', headers: blob.headers, body: blob.body as Blob })
  t.match(await blobRes.json(), { type: 'application/x-test', length: 7, verification: { verified: true } })

  const bytes = await digestBody('{"a":1}')
  t.same(bytes, { body: '{"a":1}', headers: { 'content-digest': sf('{"a":1}') } })
  await t.rejects(digestBody({} as never), TypeError)
  await t.rejects(digestBody('x', []), /at least one algorithm/)
  await t.rejects(digestBody('x', 'sha-1' as never), { code: 'FST_DIGEST_UNKNOWN_ALGORITHM' })
})
