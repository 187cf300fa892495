// Request verification when no length header says whether there is a body:
// HTTP/2 (no content-length, no transfer-encoding), HTTP/1.1 chunked, and
// inject with a Readable payload (light-my-request sends no content-length
// for it). Body presence is decided by the bytes that arrive, never by the
// length headers.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildVerifyApp, b64, sf, HELLO } from './request-helpers'
import { assertProblem, failOnCrash, json, pieces, serve, type Reply, type TapTest, type Upload } from './upload-helpers'

type Mode = 'h2' | 'h1-chunked' | 'inject-stream'
const MODES: Mode[] = ['h2', 'h1-chunked', 'inject-stream']
type Send = (upload: Upload) => Promise<Reply>

/** The verify app for `mode`, and how to send it a request. */
async function client (t: TapTest, mode: Mode, opts: FastifyDigestFieldsOptions = {}): Promise<Send> {
  failOnCrash(t)
  if (mode === 'inject-stream') {
    const app = await buildVerifyApp(t, opts)
    return async ({ method = 'POST', path, headers = {}, body }) => {
      const chunks: Buffer[] = []
      for await (const chunk of body ?? []) chunks.push(Buffer.from(chunk))
      const res = await app.inject({ method: method as 'POST', url: path, headers: headers as Record<string, string>, payload: Readable.from(chunks) })
      return { status: res.statusCode, headers: res.headers as Reply['headers'], body: res.rawPayload, reset: false }
    }
  }
  const served = await serve(t, mode === 'h2' ? 'h2' : 'h1', opts)
  if (mode === 'h2') return served.send
  return (upload) => served.send({ ...upload, headers: { 'transfer-encoding': 'chunked', ...upload.headers } })
}

const VERIFIED = { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] }

// One body per parser of buildVerifyApp's /json: JSON, text, buffer.
const BODIES: Array<{ type: string, bytes: Buffer, parsed: unknown }> = [
  { type: 'application/json', bytes: Buffer.from(HELLO), parsed: { hello: 'world' } },
  { type: 'text/plain', bytes: Buffer.from('plain text, '.repeat(100)), parsed: 'plain text, '.repeat(100) },
  { type: 'application/octet-stream', bytes: Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) & 0x7f)), parsed: Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) & 0x7f)).toString('latin1') }
]

for (const mode of MODES) {
  test(`${mode}: a body without content-length and a right Content-Digest is verified`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode)
    for (const { type, bytes, parsed } of BODIES) {
      const res = await send({ path: '/json', headers: { 'content-type': type, 'content-digest': sf(bytes) }, body: pieces(bytes, 3), delay: 5 })
      t.equal(res.status, 200, type)
      t.same(json(res), { body: parsed, verification: VERIFIED }, type)
    }
  })

  test(`${mode}: a body without content-length and a wrong Content-Digest is refused with a 400 problem`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode)
    for (const { type, bytes } of BODIES) {
      const res = await send({ path: '/json', headers: { 'content-type': type, 'content-digest': sf('not the body') }, body: pieces(bytes, 3), delay: 5 })
      assertProblem(t, res, 'FST_DIGEST_MISMATCH', 400, type)
      t.same(res.status === 400 ? json(res).mismatched_digests : null, [{ algorithm: 'sha-256', provided_digest: `:${b64('not the body')}:`, header: 'Content-Digest' }], type)
    }
  })

  test(`${mode}: the digest of the empty string does not match a body that arrived without content-length`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode)
    for (const { type, bytes } of BODIES) {
      const res = await send({ path: '/json', headers: { 'content-type': type, 'content-digest': sf('') }, body: [bytes] })
      assertProblem(t, res, 'FST_DIGEST_MISMATCH', 400, type)
    }
  })

  test(`${mode}: verify: required refuses a body without content-length that carries no digest`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode, { verify: 'required' })
    for (const { type, bytes } of BODIES) {
      const res = await send({ path: '/json', headers: { 'content-type': type }, body: pieces(bytes, 2) })
      assertProblem(t, res, 'FST_DIGEST_MISSING', 400, type)
    }
  })

  test(`${mode}: an empty body with the digest of the empty string is verified`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode)
    // Without a content-type, fastify answers 415 to a chunked HTTP/1.1 body, even an empty one.
    for (const headers of mode === 'h1-chunked' ? [{ 'content-type': 'text/plain' }] : [{ 'content-type': 'text/plain' }, {}]) {
      // No body at all: over HTTP/2, END_STREAM right after the headers.
      const res = await send({ path: '/json', headers: { ...headers, 'content-digest': sf('') }, body: mode === 'h2' ? undefined : [] })
      t.equal(res.status, 200, JSON.stringify(headers))
      t.same(json(res).verification, VERIFIED, JSON.stringify(headers))
    }
  })
}

test('h2: an empty body with the digest of the empty string, END_STREAM after the headers, verify: required', { timeout: 10000 }, async (t) => {
  const send = await client(t, 'h2', { verify: 'required' })
  const res = await send({ path: '/json', headers: { 'content-type': 'text/plain', 'content-digest': sf('') } })
  t.equal(res.status, 200)
  t.same(json(res).verification, VERIFIED)
})

for (const mode of ['h2', 'h1-chunked'] as const) {
  test(`${mode}: request trailers carrying Content-Digest are verified`, { timeout: 10000 }, async (t) => {
    const send = await client(t, mode)
    const headers = { 'content-type': 'application/json', trailer: 'content-digest' }
    const ok = await send({ path: '/json', headers, body: pieces(HELLO, 3), delay: 5, trailers: { 'content-digest': sf(HELLO) } })
    t.equal(ok.status, 200)
    t.same(json(ok), { body: { hello: 'world' }, verification: VERIFIED })

    const bad = await send({ path: '/json', headers, body: pieces(HELLO, 3), delay: 5, trailers: { 'content-digest': sf('{"hello": "w0rld"}\n') } })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH')
    t.same(bad.status === 400 ? json(bad).mismatched_digests.map((m: { header: string }) => m.header) : null, ['Content-Digest'])
  })
}

for (const mode of ['h2', 'h1-chunked'] as const) {
  test(`${mode}: a gzip body without content-length: Repr-Digest over the decoded bytes, Content-Digest over the gzip bytes`, { timeout: 10000 }, async (t) => {
    failOnCrash(t)
    const coded = gzipSync(HELLO)
    for (const withCompress of [false, true]) {
      const served = await serve(t, mode === 'h2' ? 'h2' : 'h1', {}, async (app) => { if (withCompress) await app.register(compress) })
      const send: Send = (upload) => served.send(mode === 'h2' ? upload : { ...upload, headers: { 'transfer-encoding': 'chunked', ...upload.headers } })
      const headers = {
        'content-type': withCompress ? 'application/json' : 'application/octet-stream',
        'content-encoding': 'gzip',
        'repr-digest': sf(HELLO, 'sha-512'),
        'content-digest': sf(coded)
      }
      const ok = await send({ path: '/json', headers, body: pieces(coded, 2), delay: 5 })
      t.equal(ok.status, 200, `compress: ${withCompress}`)
      t.same(ok.status === 200 ? json(ok).verification : null, {
        verified: true,
        fields: [
          { field: 'Repr-Digest', ok: true, results: [{ algorithm: 'sha-512', outcome: 'matched' }] },
          { field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }
        ]
      }, `compress: ${withCompress}`)

      // Repr-Digest over the gzip bytes is not the decoded representation's.
      const bad = await send({ path: '/json', headers: { ...headers, 'repr-digest': sf(coded, 'sha-512') }, body: pieces(coded, 2), delay: 5 })
      assertProblem(t, bad, 'FST_DIGEST_MISMATCH', 400, `compress: ${withCompress}`)
      t.same(bad.status === 400 ? json(bad).mismatched_digests.map((m: { header: string }) => m.header) : null, ['Repr-Digest'], `compress: ${withCompress}`)
    }
  })
}
