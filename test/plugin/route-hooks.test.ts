// lib/plugin/route-hooks.ts places the plugin's hooks on a route from a microtask
// queued by its onRoute hook. That rests on two things fastify does
// (lib/route.js), pinned in test/upstream/fastify-reply.test.ts: every onRoute
// hook runs synchronously inside route(), and the route's hook lists are read
// only at preReady. These tests check the places themselves.
import { test } from 'tap'
import Fastify from 'fastify'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { hookList, placeHooks, type RouteHooks } from '../../lib/plugin/route-hooks'

type Calls = string[]
type TapTest = Parameters<Parameters<typeof test>[0]>[0]

type Named = (name: string) => never

/** Hooks that record their name in `calls` when they run (typed loosely: any hook list takes them). */
function recorder (calls: Calls): Record<'onRequest' | 'preParsing' | 'preValidation' | 'onSend' | 'onError', Named> {
  const named = (make: (name: string) => unknown): Named => make as Named
  return {
    onRequest: named((name) => function (_q: unknown, _r: unknown, done: () => void) { calls.push(name); done() }),
    preParsing: named((name) => function (_q: unknown, _r: unknown, payload: unknown, done: (err: null, p: unknown) => void) { calls.push(name); done(null, payload) }),
    preValidation: named((name) => function (_q: unknown, _r: unknown, done: () => void) { calls.push(name); done() }),
    onSend: named((name) => function (_q: unknown, _r: unknown, payload: unknown, done: (err: null, p: unknown) => void) { calls.push(name); done(null, payload) }),
    onError: named((name) => function (_q: unknown, _r: unknown, _e: unknown, done: () => void) { calls.push(name); done() })
  }
}

/** An app whose onRoute hook places `sets` (built per route) on every route, and one route with hooks of its own. */
async function placed (t: TapTest, own: boolean, sets: (calls: Calls) => Array<RouteHooks | null>): Promise<{ app: FastifyInstance, calls: Calls }> {
  const calls: Calls = []
  const hooks = recorder(calls)
  const app = Fastify()
  t.teardown(() => app.close())
  app.addHook('onRoute', (opts: RouteOptions) => { placeHooks(opts, sets(calls)) })
  // A later onRoute hook adding its own, as @fastify/compress does.
  app.addHook('onRoute', (opts: RouteOptions) => {
    if (own) opts.onSend = [...hookList(opts.onSend), hooks.onSend('later onRoute onSend')]
  })
  const routeHooks = own
    ? {
        onRequest: hooks.onRequest('own onRequest'),
        preParsing: hooks.preParsing('own preParsing'),
        preValidation: hooks.preValidation('own preValidation'),
        onSend: hooks.onSend('own onSend'),
        onError: hooks.onError('own onError')
      }
    : {}
  app.post('/a', routeHooks, async (request) => {
    calls.push('handler')
    if ((request.body as { fail?: boolean }).fail === true) throw new Error('boom')
    return 'a'
  })
  return { app, calls }
}

function concern (calls: Calls, name: string, around: boolean): RouteHooks {
  const hooks = recorder(calls)
  return {
    onRequestFirst: hooks.onRequest(`${name} onRequest`),
    preParsingLast: hooks.preParsing(`${name} preParsing`),
    preValidationFirst: hooks.preValidation(`${name} preValidation`),
    onSendFirst: hooks.onSend(`${name} onSend first`),
    ...(around ? { onSendAround: { before: hooks.onSend(`${name} before`), after: hooks.onSend(`${name} after`), alone: hooks.onSend(`${name} alone`) } } : {}),
    onErrorLast: hooks.onError(`${name} onError`)
  }
}

test('placeHooks: first and last of each list, onSend around the route\'s own, in the order of the sets', async (t) => {
  const { app, calls } = await placed(t, true, (calls) => [concern(calls, 'A', true), null, concern(calls, 'B', false)])
  const res = await app.inject({ method: 'POST', url: '/a', payload: { fail: false } })
  t.equal(res.statusCode, 200)
  t.same(calls, [
    'A onRequest', 'B onRequest', 'own onRequest',
    'own preParsing', 'A preParsing', 'B preParsing',
    'A preValidation', 'B preValidation', 'own preValidation',
    'handler',
    'A onSend first', 'B onSend first', 'A before', 'own onSend', 'later onRoute onSend', 'A after'
  ])
  calls.length = 0
  const failed = await app.inject({ method: 'POST', url: '/a', payload: { fail: true } })
  t.equal(failed.statusCode, 500)
  t.same(calls.filter((c) => c.includes('onError')), ['own onError', 'A onError', 'B onError'])
})

test('placeHooks: a route without onSend hooks of its own gets the one hook that does both stages', async (t) => {
  const { app, calls } = await placed(t, false, (calls) => [concern(calls, 'A', true)])
  const res = await app.inject({ method: 'POST', url: '/a', payload: {} })
  t.equal(res.statusCode, 200)
  t.same(calls, ['A onRequest', 'A preParsing', 'A preValidation', 'handler', 'A onSend first', 'A alone'])
})

test('placeHooks: onSend hooks placed first, without a group around the route\'s own', async (t) => {
  const { app, calls } = await placed(t, true, (calls) => [concern(calls, 'B', false)])
  const res = await app.inject({ method: 'POST', url: '/a', payload: {} })
  t.equal(res.statusCode, 200)
  t.same(calls.slice(calls.indexOf('handler')), ['handler', 'B onSend first', 'own onSend', 'later onRoute onSend'])
})

test('placeHooks: nothing to place leaves the route alone', async (t) => {
  const { app, calls } = await placed(t, false, () => [null, {}])
  const res = await app.inject({ method: 'POST', url: '/a', payload: {} })
  t.equal(res.statusCode, 200)
  t.same(calls, ['handler'])
})
