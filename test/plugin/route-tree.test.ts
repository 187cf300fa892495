// parseRouteTree(): the routes of fastify's printRoutes() text, on the text
// fastify 5 draws for real route sets and on hand-written edge cases.
import { test } from 'tap'
import Fastify from 'fastify'
import { parseRouteTree, type PrintedRoute } from '../../lib/plugin/route-tree'

function summary (routes: PrintedRoute[]): string[] {
  return routes.map((r) => `${r.methods.join(',')} ${r.path}${r.constraints === '' ? '' : ` ${r.constraints}`}`)
}

const handler = async (): Promise<string> => 'x'

test('the paths, methods and constraints of the routes fastify draws', async (t) => {
  const app = Fastify({ exposeHeadRoutes: false })
  t.teardown(() => app.close())
  const paths = ['/', '/a', '/a/b', '/ab', '/users/:id', '/users/:id/posts', '/files/*', '/re/:n(^\\d+)-:m',
    '/x (GET)/y', '/static.txt', '/a/:p/b/:q']
  for (const path of paths) app.get(path, handler)
  app.route({ method: ['POST', 'PUT'], url: '/a', handler })
  app.delete('/a', { constraints: { host: 'example.com' } }, handler)
  app.get('/v', { constraints: { version: '1.0.0' } }, handler)
  app.get('/v', handler)
  app.register(async (child) => { child.get('/', handler) }, { prefix: '/pre' })
  await app.ready()
  const routes = parseRouteTree(app.printRoutes())
  t.same(summary(routes).sort(), [
    ...paths.filter((p) => p !== '/a').map((p) => `GET ${p}`),
    'GET,POST,PUT /a',
    'DELETE /a {"host":"example.com"}',
    'GET /v {"version":"1.0.0"}',
    'GET /v',
    'GET /pre',
    'GET /pre/'
  ].sort())
})

test('a wildcard at the root: the root key is empty', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('*', handler)
  app.get('/a', handler)
  await app.ready()
  t.same(summary(parseRouteTree(app.printRoutes())).sort(), ['GET,HEAD *', 'GET,HEAD /a'])
})

test('parametric nodes with several names show them all (the router merges them)', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/users/:id', handler)
  app.get('/users/:name/x', handler)
  await app.ready()
  t.same(summary(parseRouteTree(app.printRoutes())), ['GET,HEAD /users/:id|:name', 'GET,HEAD /users/:id|:name/x'])
})

test('meta lines belong to the route above them', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  function tagged (_request: unknown, _reply: unknown, _error: unknown, done: () => void): void { done() }
  app.get('/a', { onError: tagged }, handler)
  app.post('/a', handler)
  app.get('/b', { logLevel: 'warn' }, handler)
  await app.ready()
  const routes = parseRouteTree(app.printRoutes({ includeMeta: ['onError', 'logLevel'] }))
  t.same(routes.map((r) => [r.methods.join(','), r.path, Object.fromEntries(r.meta)]), [
    ['GET,HEAD', '/a', { onError: ['tagged()'], logLevel: '' }],
    ['POST', '/a', { logLevel: '' }],
    ['GET,HEAD', '/b', { logLevel: 'warn' }]
  ])
})

test('text that is not what find-my-way draws is read as far as it goes', async (t) => {
  t.same(parseRouteTree('(empty tree)'), [])
  t.same(parseRouteTree(''), [])
  const text = [
    '└── /',
    '    • (onError) ["before any route"]',
    '    ├── a (GET)',
    '    │   • (x) not json',
    '    │   • (no closing parenthesis',
    '    │   b (GET)',
    '    │   a (GET',
    '    │   a (DELETE)',
    'stray (GET)',
    '    └── c (PATCH)'
  ].join('\n')
  const routes = parseRouteTree(text)
  t.same(summary(routes), ['GET /a', 'DELETE /a', 'PATCH /c'])
  t.same([...(routes[0] as PrintedRoute).meta], [['x', 'not json']], 'a value that is not JSON is kept as text')
})
