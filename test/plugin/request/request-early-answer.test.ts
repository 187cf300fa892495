// A route-level onRequest hook of the application's answers before fastify
// reads the body (a cache hit, a redirect): the route's preParsing hooks
// never run. A success still waits for the body to be read and checked, as
// any success sent before the body's end does, and is never left hanging.
import { test } from 'tap'
import { once } from 'node:events'
import { PassThrough, type Readable } from 'node:stream'
import { gzipSync } from 'node:zlib'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { sf } from './request-helpers'
import { assertProblem, json, serve, TRANSPORTS, type TapTest } from './upload-helpers'

const BODY = Buffer.alloc(100 * 1024, 'b')

async function earlyAnswer (t: TapTest, transport: 'h1' | 'h2', opts: FastifyDigestFieldsOptions = {}) {
  return await serve(t, transport, opts, async (app: FastifyInstance) => {
    app.post('/early', {
      onRequest: async (request, reply) => reply.send({ early: true, verification: request.digestVerification })
    }, async () => ({ handler: true }))
  })
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a success sent from a route's onRequest hook waits for the body's check`, { timeout: 15000 }, async (t) => {
    const { send } = await earlyAnswer(t, transport)
    const headers = (digest: string): Record<string, string> => ({ 'content-type': 'application/octet-stream', 'content-digest': digest })
    const ok = await send({ path: '/early', headers: headers(sf(BODY)), body: [BODY.subarray(0, 50000), BODY.subarray(50000)], delay: 20 })
    t.equal(ok.status, 200)
    t.same(json(ok), { early: true, verification: { verified: false, reason: 'unread', fields: [] } }, 'the hook read the verification before the body arrived')
    const bad = await send({ path: '/early', headers: headers(sf('another body')), body: [BODY.subarray(0, 50000), BODY.subarray(50000)], delay: 20 })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH')
    // A small body that came whole with the headers is checked at once.
    const small = await send({ path: '/early', headers: headers(sf('small')), body: [Buffer.from('small')] })
    t.equal(small.status, 200)
    const smallBad = await send({ path: '/early', headers: headers(sf('other')), body: [Buffer.from('small')] })
    assertProblem(t, smallBad, 'FST_DIGEST_MISMATCH')
  })

  test(`${transport}: a default-mode Repr-Digest of a coding nothing decodes, answered from onRequest: 415, not a hang`, { timeout: 15000 }, async (t) => {
    const { send } = await earlyAnswer(t, transport)
    const coded = gzipSync(BODY)
    const res = await send({ path: '/early', headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'compress', 'repr-digest': sf(BODY) }, body: [coded] })
    assertProblem(t, res, 'FST_DIGEST_UNSUPPORTED_ENCODING', 415)
    // A coding decoded on the side is checked over the decoded bytes.
    const gz = await send({ path: '/early', headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'repr-digest': sf(BODY) }, body: [coded] })
    t.equal(gz.status, 200)
  })
}

for (const transport of TRANSPORTS) {
  test(`${transport}: a stream-passing handler that answers after reading part of the body, behind another plugin's stream`, { timeout: 15000 }, async (t) => {
    const { send } = await serve(t, transport, {}, async (app: FastifyInstance) => {
      // A stream of another plugin's reads request.raw: the body is hashed by the verifier's stream after it.
      app.addHook('preParsing', async (_request, _reply, payload) => payload.pipe(new PassThrough()))
      app.addContentTypeParser('application/x-part', (_request, payload, done) => done(null, payload))
      app.post('/part', async (request) => {
        const body = request.body as NodeJS.ReadableStream
        if (request.headers['x-give-up'] !== undefined) {
          // Stops reading: the stream is destroyed before its end.
          const first = await (body as Readable)[Symbol.asyncIterator]().next()
          ;(body as Readable).destroy()
          return { first: (first.value as Buffer).length }
        }
        const [chunk] = await once(body as Readable, 'data') as [Buffer]
        return { first: chunk.length > 0, verification: request.digestVerification }
      })
    })
    const headers = (digest: string): Record<string, string> => ({ 'content-type': 'application/x-part', 'content-digest': digest })
    const parts = [BODY.subarray(0, 50000), BODY.subarray(50000)]
    const ok = await send({ path: '/part', headers: headers(sf(BODY)), body: parts, delay: 20 })
    t.equal(ok.status, 200)
    t.same(json(ok), { first: true, verification: { verified: false, reason: 'unread', fields: [] } })
    const bad = await send({ path: '/part', headers: headers(sf('another body')), body: parts, delay: 20 })
    assertProblem(t, bad, 'FST_DIGEST_MISMATCH')
    const gaveUp = await send({ path: '/part', headers: { ...headers(sf(BODY)), 'x-give-up': '1' }, body: parts, delay: 20 })
    assertProblem(t, gaveUp, 'FST_DIGEST_INCOMPLETE')
  })
}
