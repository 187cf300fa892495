// QUERY (RFC 10008): a safe method with a request body, which fastify 5
// routes. Its body is verified as a POST's, over HTTP/1.1 (with a length and
// chunked) and HTTP/2; its response carries digests and Vary as any other.
import { test } from 'tap'
import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { b64, sf } from './request-helpers'
import { assertProblem, json, pieces, serve, type TapTest } from './upload-helpers'
import { h2QueryRefused } from '../../loaded-majors'

const QUERY = Buffer.from(JSON.stringify({ select: ['id', 'title'], where: { title: 'New Title' } }))

/** A QUERY route answering with what it was asked and how the body was verified. */
function route (app: FastifyInstance): void {
  app.route({
    method: 'QUERY',
    url: '/items',
    handler: async (request) => ({ asked: request.body, verification: request.digestVerification })
  })
}

for (const transport of ['h1', 'h1-chunked', 'h2'] as const) {
  const skip = transport === 'h2' ? h2QueryRefused : false
  test(`QUERY (${transport}): the body is verified as a POST's; the answer carries its digests and Vary`, { skip }, async (t: TapTest) => {
    const served = await serve(t, transport === 'h2' ? 'h2' : 'h1', { verify: 'required', contentDigest: true }, route)
    const framing: Record<string, string> = transport === 'h1-chunked'
      ? { 'transfer-encoding': 'chunked' }
      : transport === 'h1' ? { 'content-length': String(QUERY.length) } : {}
    const send = (headers: Record<string, string>): ReturnType<typeof served.send> =>
      served.send({ method: 'QUERY', path: '/items', headers: { 'content-type': 'application/json', ...framing, ...headers }, body: pieces(QUERY, 3) })

    const ok = await send({ 'content-digest': sf(QUERY), 'want-content-digest': 'sha-512=3' })
    t.equal(ok.status, 200)
    t.same(json(ok).asked, JSON.parse(QUERY.toString()))
    t.same(json(ok).verification, { verified: true, fields: [{ field: 'Content-Digest', ok: true, results: [{ algorithm: 'sha-256', outcome: 'matched' }] }] })
    t.equal(ok.headers['content-digest'], `sha-512=:${createHash('sha512').update(ok.body).digest('base64')}:`, 'the answer\'s digest, in the algorithm asked')
    t.match(String(ok.headers.vary), /Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest/)

    const wrong = await send({ 'content-digest': sf('another query') })
    assertProblem(t, wrong, 'FST_DIGEST_MISMATCH', 400, 'a wrong digest')
    t.same(json(wrong).mismatched_digests, [{ algorithm: 'sha-256', provided_digest: `:${b64('another query')}:`, header: 'Content-Digest' }])

    const missing = await send({})
    assertProblem(t, missing, 'FST_DIGEST_MISSING', 400, 'required, and none sent')
  })
}
