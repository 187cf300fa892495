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

/** The plugin on the fastify under test, reporting `version`: a stream's answer to TE: trailers, raw. */
async function pluginStream (t: { teardown (fn: () => unknown): void }, version: string | null, path: string): Promise<string> {
  const app = Fastify()
  t.teardown(() => app.close())
  if (version !== null) Object.defineProperty(app, 'version', { value: version })
  await app.register(digestFields, { contentDigest: true })
  app.get('/s', async (_req, reply) => reply.type('text/plain').send(Readable.from(['one ', 'two'])))
  app.get('/route', { digest: { trailers: true } }, async (_req, reply) => reply.type('text/plain').send(Readable.from(['one ', 'two'])))
  return await rawExchange(app, `GET ${path} HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nConnection: close\r\n\r\n`)
}

test('on fastify 6.0.0-alpha.4, which loses a piped stream\'s trailers, a stream\'s digests go in header fields', async (t) => {
  const digest = 'content-digest: sha-256=:irY+KaS6FOThaI+cFeWvkIlUITWMlFsEMfhdZpd709I=:'
  for (const path of ['/s', '/route']) {
    const lost = await pluginStream(t, '6.0.0-alpha.4', path)
    t.match(lost, new RegExp(`^HTTP/1\\.1 200[^]*\\r\\n${digest.replace(/[+/]/g, '\\$&')}\\r\\n[^]*\\r\\n\\r\\n`, 'i'), `${path}: in the head`)
    t.notMatch(lost, /\r\ntrailer:/i, `${path}: no Trailer field announced`)
    for (const version of [null, '6.0.0-alpha.5', '6.0.0']) {
      const kept = await pluginStream(t, version, path)
      t.match(kept, /\r\ntrailer: content-digest\r\n/i, `${path} on ${version ?? 'the fastify under test'}: announced`)
      t.match(kept, new RegExp(`\\r\\n0\\r\\n${digest.replace(/[+/]/g, '\\$&')}\\r\\n\\r\\n$`, 'i'), `${path}: as a trailer`)
    }
  }
})
