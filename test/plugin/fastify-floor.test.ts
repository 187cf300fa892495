// The plugin needs fastify >= 5.12.8 (lib/index.ts): earlier 5.x releases lose
// a piped stream's trailers. Shown here on the last release before the fix
// (devDependency alias fastify5127 = fastify@5.12.7), without the plugin, and
// against the fastify the suite runs on; and the plugin refuses 5.12.7 at
// registration instead of sending a Trailer field with no trailers.
import { test } from 'tap'
import { Readable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import Fastify from 'fastify'
import digestFields from '../../lib/index'
import { rawExchange } from '../helpers'
import oldFastify from 'fastify5127'

/** fastify 5.12.7, typed as the suite's fastify (its own types are another copy's). */
const fastify5127 = (): FastifyInstance => oldFastify() as unknown as FastifyInstance

/** A stream with a trailer set by hand (reply.trailer), over a real socket. */
async function streamWithTrailer (app: FastifyInstance): Promise<string> {
  app.get('/s', async (_req, reply) => {
    reply.trailer('x-sum', async () => 'abc')
    return reply.type('text/plain').send(Readable.from(['one ', 'two']))
  })
  return await rawExchange(app, 'GET /s HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n')
}

test('fastify 5.12.7 ends a piped stream before its trailers; the fastify under test writes them', async (t) => {
  const old = fastify5127()
  t.teardown(() => old.close())
  t.equal(old.version, '5.12.7')
  const before = await streamWithTrailer(old)
  t.match(before, /^HTTP\/1\.1 200/)
  t.match(before, /\r\n0\r\n\r\n$/, 'the last chunk, then nothing')
  t.notMatch(before, /x-sum: abc/i, 'the trailer is lost')

  const app = Fastify()
  t.teardown(() => app.close())
  const now = await streamWithTrailer(app)
  t.match(now, /\r\n0\r\nx-sum: abc\r\n\r\n$/, 'the trailer follows the last chunk')
})

test('the plugin refuses fastify 5.12.7 at registration, naming the version it needs', async (t) => {
  const old = fastify5127()
  t.teardown(() => old.close())
  await t.rejects(async () => { await old.register(digestFields).ready() }, { code: 'FST_ERR_PLUGIN_VERSION_MISMATCH', message: /\^5\.12\.8/ })
})
