// Uploads that end badly: an HTTP/2 stream reset mid-upload, an HTTP/1.1
// socket destroyed mid-upload, a multipart body cut off before its closing
// boundary. Each ends in a clear 4xx or a clean close: never a 5xx, a crash
// or a hang, and the server keeps serving afterwards.
import { test } from 'tap'
import { pipeline } from 'node:stream/promises'
import multipart from '@fastify/multipart'
import type { FastifyInstance } from 'fastify'
import { sf } from './request-helpers'
import {
  failOnCrash,
  firstEnded,
  json,
  multipartBody,
  pieces,
  serve,
  serverErrors,
  sink,
  MULTIPART_TYPE,
  TRANSPORTS,
  type Served,
  type TapTest,
  type Transport
} from './upload-helpers'

/** How the handlers' reads settled (`/pipe resolved`, `/file rejected`), in order; `once` waits for a path's first. */
class Settled {
  readonly list: string[] = []
  readonly #waiting = new Map<string, (outcome: string) => void>()

  record (outcome: string): void {
    this.list.push(outcome)
    const path = outcome.split(' ')[0] as string
    this.#waiting.get(path)?.(outcome)
    this.#waiting.delete(path)
  }

  /** How the first read on `path` settled, once it has. */
  first (path: string): Promise<string> {
    const found = this.list.find((s) => s.startsWith(`${path} `))
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve) => { this.#waiting.set(path, resolve) })
  }
}

/**
 * Handlers that read the body past fastify's stream, as an application
 * writes them; how each read settled is recorded in `settled`.
 */
function routes (settled: Settled) {
  const read = async (path: string, reading: () => Promise<void>): Promise<void> => {
    try {
      await reading()
    } catch (err) {
      settled.record(`${path} rejected`)
      throw err
    }
    settled.record(`${path} resolved`)
  }
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(multipart)
    app.post('/pipe', async (request) => {
      const out = sink()
      await read('/pipe', () => pipeline(request.raw, out))
      return { bytes: out.bytes, verification: request.digestVerification }
    })
    app.post('/file', async (request) => {
      const out = sink()
      await read('/file', async () => {
        const file = await request.file()
        if (file === undefined) throw new Error('no file')
        await pipeline(file.file, out)
      })
      return { bytes: out.bytes, verification: request.digestVerification }
    })
  }
}

async function server (t: TapTest, transport: Transport): Promise<Served & { settled: Settled }> {
  failOnCrash(t)
  const settled = new Settled()
  const served = await serve(t, transport, {}, routes(settled), 'info')
  return { ...served, settled }
}

/** How the first read on `path` settled, once it has. */
const firstRead = ({ settled }: { settled: Settled }, path: string): Promise<string> => settled.first(path)

const FILE = Buffer.alloc(64 * 1024, 'f')
const FORM = multipartBody(FILE)
const RAW = Buffer.alloc(64 * 1024, 'r')
const TEXT = 'a good request after the bad one'

/** What each route gets: its content-type and a whole body. */
const CASES: Array<{ path: string, type: string, body: Buffer }> = [
  { path: '/json', type: 'application/octet-stream', body: RAW },
  { path: '/pipe', type: 'application/x-raw', body: RAW },
  { path: '/file', type: MULTIPART_TYPE, body: FORM }
]

/** A good request on `path` (with its length, so that it is checked the same way today), then on /json. */
async function stillServes (t: TapTest, { send, settled }: Served & { settled: Settled }, path: string, type: string, body: Buffer): Promise<void> {
  const again = await send({ path, headers: { 'content-type': type, 'content-length': String(body.length), 'content-digest': sf(body) }, body: [body] })
  t.equal(again.status, 200, `${path} still answers`)
  if (path !== '/json') t.same(settled.list.at(-1), `${path} resolved`, `${path} read the good request`)
  const res = await send({ path: '/json', headers: { 'content-type': 'text/plain', 'content-length': String(TEXT.length), 'content-digest': sf(TEXT) }, body: [TEXT] })
  t.equal(res.status, 200, 'a text /json request still answers')
  t.same(res.status === 200 ? json(res).verification.verified : null, true, '/json still verifies')
}

/**
 * @fastify/multipart 9 destroys the file stream of a failed body without
 * its error (10 passes it on): the handler rethrows a bare
 * ERR_STREAM_PREMATURE_CLOSE, which the plugin's onError hook gives the
 * failure's 4xx, so fastify's error handler does not log it as a 500
 * (the client is gone, or gets the 4xx). Checked once the bad request's end
 * is logged.
 */
async function noServerErrors (t: TapTest, served: Served): Promise<void> {
  const ended = await firstEnded(served)
  const status = (ended.res as { statusCode: number }).statusCode
  t.ok(status >= 400 && status < 500, `the bad request ended as a 4xx (${status}: ${String(ended.msg)})`)
  t.same(serverErrors(served.logs).map((line) => line.msg), [], 'no server error logged')
}

for (const { path, type, body } of CASES) {
  test(`h2: a stream reset mid-upload on ${path} ends cleanly and the server keeps serving`, { timeout: 15000 }, async (t) => {
    const served = await server(t, 'h2')
    const reset = await served.send({
      path,
      headers: { 'content-type': type, 'content-digest': sf(body) },
      body: pieces(body, 4),
      delay: 20,
      cancelAfter: 2
    })
    t.ok(reset.status === 0 || (reset.status >= 400 && reset.status < 500), `no 2xx or 5xx for the reset upload (${reset.status})`)
    if (path !== '/json') t.same(await firstRead(served, path), `${path} rejected`, 'the handler\'s read of the cut body rejected')
    await stillServes(t, served, path, type, body)
    await noServerErrors(t, served)
  })

  test(`h1: a socket destroyed mid-upload on ${path} ends cleanly and the server keeps serving`, { timeout: 15000 }, async (t) => {
    const served = await server(t, 'h1')
    const aborted = await served.send({
      path,
      // More than is sent: the upload is cut off by the socket's end.
      headers: { 'content-type': type, 'content-length': String(body.length * 4), 'content-digest': sf(body) },
      body: pieces(body, 4),
      delay: 20,
      cancelAfter: 2
    })
    t.equal(aborted.status, 0, 'no response on a destroyed socket')
    if (path !== '/json') t.same(await firstRead(served, path), `${path} rejected`, 'the handler\'s read of the cut body rejected')
    await stillServes(t, served, path, type, body)
    await noServerErrors(t, served)
  })
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a multipart body that ends cleanly before its closing boundary gets a 4xx`, { timeout: 15000 }, async (t) => {
    const served = await server(t, transport)
    // Cut off in the middle of the file; the digest is the whole form's (what the client meant to send).
    const cut = FORM.subarray(0, FORM.length - FILE.length / 2)
    const headers = { 'content-type': MULTIPART_TYPE, 'content-digest': sf(FORM), ...(transport === 'h1' ? { 'transfer-encoding': 'chunked' } : {}) }
    const res = await served.send({ path: '/file', headers, body: pieces(cut, 3), delay: 10 })
    t.ok(res.status >= 400 && res.status < 500, `a 4xx (${res.status}): ${res.body.toString().slice(0, 200)}`)
    t.same(await firstRead(served, '/file'), '/file rejected', 'the handler\'s read of the cut body rejected')
    await stillServes(t, served, '/file', MULTIPART_TYPE, FORM)
    await noServerErrors(t, served)
  })
}
