// Registration order: routes the plugin's onRoute hook cannot see are named in
// one warning at `ready`; a properly awaited registration warns about nothing.
import { test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import digestFields = require('../../lib/index')
import { unseenRoutes } from '../../lib/plugin/route-coverage'

interface LogLine { level: number, msg: string, routes?: string[] }

/** An app logging at warn level into `lines`. */
function loggingApp (t: { teardown (fn: () => unknown): void }, lines: LogLine[]): FastifyInstance {
  const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } })
  t.teardown(() => app.close())
  return app
}

const handler = async (): Promise<string> => 'body'

test('register without await: one warning at ready names every route the plugin missed, and says how to fix it', async (t) => {
  const lines: LogLine[] = []
  const app = loggingApp(t, lines)
  app.get('/before-register', handler)
  app.register(async (child) => { child.get('/plugin-registered-before', handler) })
  app.register(digestFields, { contentDigest: true }) // not awaited
  app.get('/right-after', handler)
  app.route({ method: ['POST', 'PUT'], url: '/methods', handler })
  app.get('/versioned', { constraints: { version: '1.0.0' } }, handler)
  app.get('/items/:id', handler)
  // seen by the plugin: not named
  app.register(async (child) => {
    child.get('/plugin-registered-after', handler)
    child.get('/off', { digest: false }, handler)
  })
  app.register(fp(async (child) => { child.get('/fp-plugin-registered-after', handler) }))
  app.after(() => { app.get('/in-after', handler) })
  await app.register(async () => {})
  app.get('/after-a-later-await', handler)
  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send('none'))
  t.equal(lines.length, 0, 'nothing before ready')
  await app.ready()

  const missed = [
    'GET,HEAD /before-register',
    'GET,HEAD /right-after',
    'POST,PUT /methods',
    'GET,HEAD /versioned {"version":"1.0.0"}',
    'GET,HEAD /items/:id',
    'GET,HEAD /plugin-registered-before'
  ]
  t.equal(lines.length, 1, 'one warning')
  const [warning] = lines as [LogLine]
  t.equal(warning.level, 40, 'at warn level')
  t.same([...warning.routes ?? []].sort(), [...missed].sort(), 'the routes, with methods and constraints')
  t.match(warning.msg, /^fastify-digest-fields: 6 routes were declared before the plugin was loaded and get no digest fields and no request verification: /)
  for (const route of missed) t.ok(warning.msg.includes(route), `the message names ${route}`)
  t.match(warning.msg, /Declare routes after `await app\.register\(digestFields\)` has resolved, or in plugins registered after it\.$/)
  t.notMatch(warning.msg, /\/off|registered-after|in-after|later-await/, 'seen routes, digest: false included, are not named')

  // The warning tells the truth: the named routes have no digests, the others do.
  for (const url of ['/before-register', '/right-after', '/items/1', '/plugin-registered-before']) {
    t.equal((await app.inject(url)).headers['content-digest'], undefined, `${url} is not covered`)
  }
  t.equal((await app.inject({ method: 'POST', url: '/methods' })).headers['content-digest'], undefined, 'POST /methods is not covered')
  for (const url of ['/plugin-registered-after', '/fp-plugin-registered-after', '/in-after', '/after-a-later-await']) {
    t.match((await app.inject(url)).headers['content-digest'], /^sha-256=:/, `${url} is covered`)
  }
  t.equal((await app.inject('/off')).headers['content-digest'], undefined, 'digest: false')
  await app.ready()
  t.equal(lines.length, 1, 'a second ready() does not warn again')
})

test('one route: the singular', async (t) => {
  const lines: LogLine[] = []
  const app = loggingApp(t, lines)
  app.register(digestFields)
  app.post('/upload', handler)
  await app.ready()
  t.equal(lines.length, 1)
  t.same(lines[0]?.routes, ['POST /upload'])
  t.match(lines[0]?.msg, /^fastify-digest-fields: 1 route was declared before the plugin was loaded and gets no digest fields/)
})

test('await app.register(digestFields) before the routes: no warning', async (t) => {
  const lines: LogLine[] = []
  const app = loggingApp(t, lines)
  await app.register(digestFields, { contentDigest: true })
  app.get('/', handler)
  app.get('/off', { digest: false }, handler)
  app.get('/versioned', { constraints: { version: '2.0.0' } }, handler)
  app.get('/users/:id', handler)
  app.get('/files/*', handler)
  app.get('/with-on-error', { onError: (_request, _reply, _error, done) => { done() } }, handler)
  app.route({ method: ['GET', 'POST', 'DELETE'], url: '/multi', handler })
  app.register(async (child) => {
    child.get('/', handler)
    child.get('/users/:name/posts', handler)
  }, { prefix: '/prefixed' })
  app.get('/fails', async () => { throw new Error('boom') })
  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send('none'))
  await app.ready()
  t.same(lines, [], 'no log line at all')
  t.match((await app.inject('/prefixed/')).headers['content-digest'], /^sha-256=:/, 'covered')
  // The marks are onError hooks that do nothing: an error response is fastify's own.
  const failed = await app.inject('/fails')
  t.equal(failed.statusCode, 500)
  t.same(failed.json(), { statusCode: 500, error: 'Internal Server Error', message: 'boom' })
  t.match(failed.headers['content-digest'], /^sha-256=:/, 'with its digest')
})

test('the marks on a route the plugin missed do not change its error responses either', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.register(digestFields)
  app.get('/fails', async () => { throw Object.assign(new Error('teapot'), { statusCode: 418 }) })
  await app.ready()
  const failed = await app.inject('/fails')
  t.equal(failed.statusCode, 418)
  t.same(failed.json(), { statusCode: 418, error: 'I\'m a Teapot', message: 'teapot' })
})

test('only the plugin\'s own scope is checked', async (t) => {
  const lines: LogLine[] = []
  const app = loggingApp(t, lines)
  app.get('/outside', handler) // never in the plugin's scope: not named
  app.register(async (child) => {
    await child.register(digestFields)
    child.get('/awaited', handler)
  })
  app.register(async (child) => {
    child.register(digestFields) // a second registration, in a sibling scope
    child.get('/not-awaited', handler)
    child.register(async (grandchild) => { grandchild.get('/not-awaited/plugin-after', handler) })
  }, { prefix: '/sibling' })
  await app.ready()
  t.equal(lines.length, 1, 'one warning, from the scope that missed a route')
  t.same(lines[0]?.routes, ['GET,HEAD /sibling/not-awaited'])
})

test('an app without routes, or whose routes are all seen, warns about nothing', async (t) => {
  const lines: LogLine[] = []
  const empty = loggingApp(t, lines)
  await empty.register(digestFields)
  await empty.ready()
  const other = loggingApp(t, lines)
  other.register(digestFields)
  other.register(async (child) => { child.get('/late', handler) })
  await other.ready()
  t.same(lines, [])
})

test('unseenRoutes: routes marked in scope and not seen, from printRoutes text', async (t) => {
  const printed = [
    '└── /',
    '    ├── a (GET, HEAD)',
    '    │   • (onError) ["scope()"]',
    '    ├── b (GET)',
    '    │   • (onError) ["scope()","seen()"]',
    '    ├── c (GET)',
    '    │   • (onError) ["other()"]',
    '    ├── d (GET)',
    '    ├── e (GET)',
    '    │   • (onError) "scope()"',
    '    └── f (POST) {"host":"example.com"}',
    '        • (onError) ["user()","scope()"]'
  ].join('\n')
  t.same(unseenRoutes(printed, 'scope()', 'seen()'), ['GET,HEAD /a', 'POST /f {"host":"example.com"}'])
  t.same(unseenRoutes('(empty tree)', 'scope()', 'seen()'), [])
})
