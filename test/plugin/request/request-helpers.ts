// Helpers for the request verification tests: an app with the plugin and
// routes that report what the handler saw, and digest values computed
// independently with node:crypto.
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../../types/index'
import { buildApp } from '../../helpers'

export const HELLO = '{"hello": "world"}\n'
export const NEW_TITLE = '{"title": "New Title"}\n'
/** sha-256 of HELLO (RFC 9530 Appendix B), with the RFC's over-padding erratum fixed. */
export const HELLO_SHA256 = 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:'
export const PROBLEM = 'https://iana.org/assignments/http-problem-types#'

export { b64, sf } from '../../helpers'

/** Read a stream to its end (rejects with its error). */
export async function drain (stream: unknown): Promise<void> {
  await pipeline(stream as NodeJS.ReadableStream, new Writable({ write (_chunk, _encoding, callback) { callback() } }))
}

interface Closeable { teardown (fn: () => unknown): void }

/**
 * A fresh app with the plugin (`before` and `after` run around its
 * registration, e.g. to register @fastify/compress) and these routes, each answering
 * `{ body, verification }` (what the handler saw):
 * * POST|PUT|PATCH|DELETE /json: parsed bodies (JSON, text, and a buffer parser for octet-stream);
 * * POST /stream (content-type application/x-stream): a stream-passing
 *   parser; the handler pipes the stream into a sink and reports the bytes;
 * * POST /raw (content-type application/x-raw): the parser does not read,
 *   the handler reads request.raw itself (like @fastify/multipart);
 * * GET /json.
 */
export async function buildVerifyApp (
  t: Closeable,
  opts: FastifyDigestFieldsOptions = {},
  serverOpts: FastifyServerOptions = {},
  before?: (app: FastifyInstance) => Promise<void>,
  after?: (app: FastifyInstance) => Promise<void>
): Promise<FastifyInstance> {
  const app = await buildApp(t, opts, serverOpts, before)
  if (after !== undefined) await after(app)
  verifyRoutes(app)
  return app
}

/** The parsers and routes of buildVerifyApp. */
export function verifyRoutes (app: FastifyInstance): void {
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
  app.addContentTypeParser('application/x-stream', (_req, payload, done) => done(null, payload))
  app.addContentTypeParser('application/x-raw', (_req, _payload, done) => done(null))
  const report = async (request: { body: unknown, digestVerification: unknown }) => ({
    body: Buffer.isBuffer(request.body) ? request.body.toString('latin1') : request.body,
    verification: request.digestVerification
  })
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url: '/json', handler: report })
  app.get('/json', report)
  app.post('/stream', async (request) => {
    let bytes = 0
    await pipeline(request.body as NodeJS.ReadableStream, new Writable({
      write (chunk: Buffer, _encoding, callback) {
        bytes += chunk.length
        callback()
      }
    }))
    return { bytes, verification: request.digestVerification }
  })
  app.post('/raw', async (request) => {
    let bytes = 0
    for await (const chunk of request.raw) bytes += (chunk as Buffer).length
    return { bytes, verification: request.digestVerification }
  })
}
