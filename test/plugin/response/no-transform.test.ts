// noTransform: Cache-Control no-transform on responses that carry a digest field (RFC 9110 §7.7,
// RFC 9111 §5.2.2.6), merged with the route's directives, never twice; none on responses without one.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import digestFields = require('../../../lib/index')
import { buildApp, sf } from '../../helpers'

const body = JSON.stringify({ hello: 'world' })

test('a response with a digest field gets no-transform; one without gets no Cache-Control', async (t) => {
  const app = await buildApp(t)
  app.get('/', async () => body)
  const asked = await app.inject({ url: '/', headers: { 'want-content-digest': 'sha-256=5' } })
  t.equal(asked.headers['content-digest'], sf(body))
  t.equal(asked.headers['cache-control'], 'no-transform')
  const plain = await app.inject({ url: '/' })
  t.equal(plain.headers['content-digest'], undefined)
  t.equal(plain.headers['cache-control'], undefined, 'no digest field: Cache-Control untouched')
})

test('merged with the directives the route set, never duplicated', async (t) => {
  const app = await buildApp(t, { reprDigest: true })
  const values: Record<string, string | string[]> = {
    '/public': 'public, max-age=60',
    '/has': 'public, No-Transform',
    '/has-value': 'max-age=5,no-transform ',
    '/quoted': 'private="set-cookie, no-transform", max-age=5',
    '/escaped': 'private="a\\", no-transform\\\\", max-age=5',
    '/list': ['public', 'max-age=5'],
    '/empty': ' '
  }
  for (const [url, value] of Object.entries(values)) {
    app.get(url, async (_request, reply) => reply.header('cache-control', value).send(body))
  }
  const expected: Record<string, string> = {
    '/public': 'public, max-age=60, no-transform',
    '/has': 'public, No-Transform',
    '/has-value': 'max-age=5,no-transform ',
    // The quoted no-transform is a field name of private (RFC 9111 §5.2.2.7), not a directive.
    '/quoted': 'private="set-cookie, no-transform", max-age=5, no-transform',
    '/escaped': 'private="a\\", no-transform\\\\", max-age=5, no-transform',
    '/list': 'public, max-age=5, no-transform',
    '/empty': 'no-transform'
  }
  for (const [url, value] of Object.entries(expected)) {
    const res = await app.inject({ url })
    t.equal(res.headers['repr-digest'], sf(body), url)
    t.equal(res.headers['cache-control'], value, url)
  }
})

test('noTransform: false, as a plugin and as a route option', async (t) => {
  const app = await buildApp(t, { reprDigest: true, noTransform: false })
  app.get('/', async () => body)
  app.get('/on', { digest: { noTransform: true } }, async () => body)
  const off = await app.inject({ url: '/' })
  t.equal(off.headers['repr-digest'], sf(body))
  t.equal(off.headers['cache-control'], undefined)
  const on = await app.inject({ url: '/on' })
  t.equal(on.headers['cache-control'], 'no-transform')

  const other = await buildApp(t, { reprDigest: true })
  other.get('/off', { digest: { noTransform: false } }, async () => body)
  const routeOff = await other.inject({ url: '/off' })
  t.equal(routeOff.headers['repr-digest'], sf(body))
  t.equal(routeOff.headers['cache-control'], undefined)
})

test('digest fields in trailers only: no-transform in the header section', async (t) => {
  const app = await buildApp(t, { contentDigest: true })
  app.get('/s', async (_request, reply) => reply.type('text/plain').send(Readable.from([Buffer.from('a'), Buffer.from('b')])))
  const res = await app.inject({ url: '/s', headers: { te: 'trailers' } })
  t.equal(res.headers['content-digest'], undefined)
  t.equal(res.trailers['content-digest'], sf('ab'))
  t.equal(res.headers['cache-control'], 'no-transform')
})

test('HEAD, a static file, a 406', async (t) => {
  const app = await buildApp(t, { reprDigest: true })
  await app.register(fastifyStatic, { root: join(__dirname, '..', '..', 'fixtures'), prefix: '/files/', setHeaders: digestFields.staticHeaders })
  const head = await app.inject({ method: 'HEAD', url: '/files/client-h2-cert.pem' })
  t.equal(head.statusCode, 200)
  t.type(head.headers['repr-digest'], 'string')
  t.equal(head.headers['cache-control'], 'public, max-age=0, no-transform')
  const stale = await app.inject({ url: '/files/client-h2-cert.pem', headers: { 'repr-digest': sf('another') } })
  t.equal(stale.statusCode, 406)
  t.match(stale.headers['cache-control'], /(^|, )no-transform$/)
})
