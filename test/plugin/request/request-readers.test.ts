// Request verification of bodies read past fastify's body stream: handlers
// piping request.raw, @fastify/multipart (request.file, request.parts,
// request.saveRequestFiles), and routes that never read the body. Over real
// HTTP/1.1 and HTTP/2 servers. A body that fails its digest fails the read
// that consumes it, and the client gets the 400 problem, never a 2xx.
import { test } from 'tap'
import { pipeline } from 'node:stream/promises'
import multipart from '@fastify/multipart'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { sf } from './request-helpers'
import {
  assertProblem,
  failOnCrash,
  json,
  multipartBody,
  pieces,
  serve,
  serverErrors,
  sink,
  BOUNDARY,
  MULTIPART_TYPE,
  TRANSPORTS,
  type Reply,
  type TapTest,
  type Transport
} from './upload-helpers'
import { loadedMajor } from '../../loaded-majors'

/**
 * How a multipart read fails when the body does: @fastify/multipart 10
 * destroys the file stream with the request's error (the plugin's
 * FST_DIGEST_MISMATCH, 400); 9 destroys it without one, so the reader sees
 * ERR_STREAM_PREMATURE_CLOSE. Either way the read rejects, and the client
 * gets the 400 problem.
 */
const MULTIPART_READ_ERROR = loadedMajor('@fastify/multipart') >= 10
  ? { code: 'FST_DIGEST_MISMATCH', statusCode: 400 }
  : { code: 'ERR_STREAM_PREMATURE_CLOSE', statusCode: undefined }

/**
 * The server errors logged for a request whose read failed. @fastify/multipart's
 * saveRequestFiles logs a failed read itself, at error level ("save request
 * file", and with 10 "Could not delete file"): for /save, only fastify's
 * error handler's own lines (they carry `res`) count.
 */
function failedReadErrors (path: string, logs: Array<Record<string, unknown>>): unknown[] {
  const errors = serverErrors(logs)
  return (path === '/save' ? errors.filter((line) => line.res !== undefined) : errors).map((line) => line.msg)
}

const VERIFIED = { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }

/** `n` deterministic bytes that do not contain the multipart boundary. */
function content (n: number, seed = 1): Buffer {
  const out = Buffer.alloc(n)
  let x = seed
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

interface ReadError { route: string, code: unknown, statusCode: unknown }

/**
 * The reader routes, each answering `{ bytes, verification }` with the
 * verification read after the body was consumed; a failed read is recorded
 * in `errors` and rethrown (except by /pipe-caught, which answers 200).
 */
function readerRoutes (errors: ReadError[]) {
  const failed = (route: string, err: unknown): unknown => {
    const { code, statusCode } = err as { code?: unknown, statusCode?: unknown }
    errors.push({ route, code, statusCode })
    return err
  }
  return async (app: FastifyInstance): Promise<void> => {
    await app.register(multipart)
    app.post('/pipe', async (request) => {
      const out = sink()
      try {
        await pipeline(request.raw, out)
      } catch (err) {
        throw failed('/pipe', err)
      }
      return { bytes: out.bytes, verification: request.digestVerification }
    })
    app.post('/pipe-caught', async (request, reply) => {
      const out = sink()
      try {
        await pipeline(request.raw, out)
      } catch (err) {
        failed('/pipe-caught', err)
        return reply.code(200).send({ ok: 'caught' })
      }
      return { bytes: out.bytes, verification: request.digestVerification }
    })
    app.post('/file', async (request) => {
      const out = sink()
      try {
        const file = await request.file()
        if (file === undefined) throw new Error('no file')
        await pipeline(file.file, out)
      } catch (err) {
        throw failed('/file', err)
      }
      return { bytes: out.bytes, verification: request.digestVerification }
    })
    app.post('/parts', async (request) => {
      const out = sink()
      const fields: string[] = []
      try {
        for await (const part of request.parts()) {
          if (part.type === 'file') await pipeline(part.file, out)
          else fields.push(String(part.value))
        }
      } catch (err) {
        throw failed('/parts', err)
      }
      return { bytes: out.bytes, fields, verification: request.digestVerification }
    })
    app.post('/save', async (request) => {
      let files
      try {
        files = await request.saveRequestFiles()
      } catch (err) {
        throw failed('/save', err)
      }
      // @fastify/multipart 10 answers { files }, 9 the array of files.
      const saved = Array.isArray(files) ? files as unknown[] : files.files
      return { files: saved.length, verification: request.digestVerification }
    })
    const unread = async (request: { digestVerification: unknown }) => ({ verification: request.digestVerification })
    app.post('/unread', unread)
    app.post('/unread-limited', { bodyLimit: 1000 }, unread)
  }
}

async function readers (t: TapTest, transport: Transport, opts: FastifyDigestFieldsOptions = {}) {
  failOnCrash(t)
  const errors: ReadError[] = []
  const served = await serve(t, transport, opts, readerRoutes(errors))
  return { ...served, errors }
}

/** HTTP/1.1 uploads say their length (as form clients do); HTTP/2 ones do not. */
function length (transport: Transport, body: Buffer): Record<string, string> {
  return transport === 'h1' ? { 'content-length': String(body.length) } : {}
}

const RAW = content(256 * 1024)
const FILE = content(100 * 1024, 7)
const FORM = multipartBody(FILE, { title: 'a file', note: 'last part next' })
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)

/**
 * FORM in chunks, the closing boundary alone in the last one (after a
 * pause), so that a reader which ends the file stream on seeing the
 * boundary does it only when the last bytes are in.
 */
function formChunks (): Buffer[] {
  return [...pieces(FORM.subarray(0, FORM.length - TAIL.length), 4), TAIL]
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a handler piping request.raw sees the body verified once the pipeline resolved`, { timeout: 15000 }, async (t) => {
    const { send, errors } = await readers(t, transport)
    const res = await send({ path: '/pipe', headers: { 'content-type': 'application/x-raw', 'content-digest': sf(RAW), ...length(transport, RAW) }, body: pieces(RAW, 8), delay: 2 })
    t.equal(res.status, 200)
    t.same(json(res), { bytes: RAW.length, verification: VERIFIED })
    t.same(errors, [])
  })

  test(`${transport}: a wrong digest rejects the pipeline of request.raw with FST_DIGEST_MISMATCH, and the client gets the 400 problem`, { timeout: 15000 }, async (t) => {
    const { send, errors } = await readers(t, transport)
    const res = await send({ path: '/pipe', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('another body'), ...length(transport, RAW) }, body: pieces(RAW, 8), delay: 2 })
    t.same(errors, [{ route: '/pipe', code: 'FST_DIGEST_MISMATCH', statusCode: 400 }], 'the pipeline rejected')
    assertProblem(t, res, 'FST_DIGEST_MISMATCH')
  })

  test(`${transport}: a handler that catches the failed pipeline of request.raw and answers 200 still sends the 400 problem`, { timeout: 15000 }, async (t) => {
    const { send, errors } = await readers(t, transport)
    const res = await send({ path: '/pipe-caught', headers: { 'content-type': 'application/x-raw', 'content-digest': sf('another body'), ...length(transport, RAW) }, body: pieces(RAW, 8), delay: 2 })
    t.same(errors, [{ route: '/pipe-caught', code: 'FST_DIGEST_MISMATCH', statusCode: 400 }], 'the pipeline rejected')
    assertProblem(t, res, 'FST_DIGEST_MISMATCH')
    t.notMatch(res.body.toString(), /caught/, 'the handler\'s 200 body is not sent')
  })

  for (const path of ['/file', '/parts', '/save']) {
    test(`${transport}: @fastify/multipart ${path}: a right Content-Digest over the whole form is verified after the read`, { timeout: 15000 }, async (t) => {
      const { send, errors } = await readers(t, transport)
      const res = await send({ path, headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf(FORM), ...length(transport, FORM) }, body: formChunks(), delay: 20 })
      t.equal(res.status, 200)
      const body = res.status === 200 ? json(res) : {}
      t.same(body.verification, VERIFIED)
      if (path === '/save') t.equal(body.files, 1)
      else t.equal(body.bytes, FILE.length)
      if (path === '/parts') t.same(body.fields, ['a file', 'last part next'])
      t.same(errors, [])
    })

    test(`${transport}: @fastify/multipart ${path}: a wrong Content-Digest rejects the read, and the client gets the 400 problem`, { timeout: 15000 }, async (t) => {
      const { send, errors, logs } = await readers(t, transport)
      const res = await send({ path, headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf(multipartBody(FILE)), ...length(transport, FORM) }, body: formChunks(), delay: 20 })
      t.same(errors, [{ route: path, ...MULTIPART_READ_ERROR }], 'the read rejected')
      assertProblem(t, res, 'FST_DIGEST_MISMATCH')
      t.same(failedReadErrors(path, logs), [], 'the rethrown read error is not logged as a server error')
    })
  }

  // busboy ends a file part as soon as it sees CRLF "--" boundary, before
  // the closing "--" (checked against @fastify/busboy): the last few bytes
  // decide whether the read may end.
  test(`${transport}: @fastify/multipart /file: a wrong digest rejects the read even when only the closing "--" is still to come`, { timeout: 15000 }, async (t) => {
    const { send, errors, logs } = await readers(t, transport)
    const chunks = [FORM.subarray(0, FORM.length - 4), FORM.subarray(FORM.length - 4)]
    t.equal(chunks[1]?.toString(), '--\r\n')
    const res = await send({ path: '/file', headers: { 'content-type': MULTIPART_TYPE, 'content-digest': sf('another form'), ...length(transport, FORM) }, body: chunks, delay: 50 })
    t.same(errors, [{ route: '/file', ...MULTIPART_READ_ERROR }], 'the read rejected')
    assertProblem(t, res, 'FST_DIGEST_MISMATCH')
    t.same(serverErrors(logs).map((line) => line.msg), [], 'no server error logged')
  })

  test(`${transport}: verify: required reads and checks the body of a route that never reads it`, { timeout: 15000 }, async (t) => {
    const { send } = await readers(t, transport, { verify: 'required' })
    const headers = (digest: string, body: Buffer) => ({ 'content-type': 'application/x-raw', 'content-digest': digest, ...length(transport, body) })
    const ok = await send({ path: '/unread', headers: headers(sf(RAW), RAW), body: pieces(RAW, 4), delay: 2 })
    t.equal(ok.status, 200, 'right digest')

    const bad = await send({ path: '/unread', headers: headers(sf('another body'), RAW), body: pieces(RAW, 4), delay: 2 })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH', 400, 'wrong digest')

    const big = content(10 * 1024, 3)
    const tooLarge: Reply = await send({ path: '/unread-limited', headers: headers(sf(big), big), body: pieces(big, 4), delay: 2 })
    t.equal(tooLarge.status, 413, 'a body over the route\'s bodyLimit')

    const after = await send({ path: '/unread', headers: headers(sf(RAW), RAW), body: [RAW] })
    t.equal(after.status, 200, 'the server still serves')
  })

  test(`${transport}: under verify: if-present a route that never reads the body answers 200 and reports it unread`, { timeout: 15000 }, async (t) => {
    const { send } = await readers(t, transport)
    const res = await send({ path: '/unread', headers: { 'content-type': 'application/x-raw', 'content-digest': sf(RAW), ...length(transport, RAW) }, body: pieces(RAW, 4), delay: 2 })
    t.equal(res.status, 200)
    t.same(res.status === 200 ? json(res) : null, { verification: { verified: false, reason: 'unread', fields: [] } })
  })
}
