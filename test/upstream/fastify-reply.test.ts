// Canaries: what the response side (lib/plugin/response/) and the route hooks (lib/plugin/route-hooks.ts) rely on in
// fastify and @fastify/static (docs/design.md, "Where the hooks run" and "What this plugin relies on"). Each test fails
// when upstream changes what it pins; none loads the plugin.
import { test } from 'tap'
import Fastify, { type RouteOptions } from 'fastify'
import fastifyStatic from '@fastify/static'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as h1Request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ReadStream } from 'node:fs'

type TapTest = Parameters<Parameters<typeof test>[0]>[0]

/** One GET over HTTP/1.1: status, head and trailers. */
async function get (port: number, path: string): Promise<{ response: IncomingMessage, body: string }> {
  const request = h1Request({ host: '127.0.0.1', port, path, agent: false })
  request.end()
  const [response] = await once(request, 'response') as [IncomingMessage]
  const chunks: Buffer[] = []
  response.on('data', (chunk: Buffer) => chunks.push(chunk))
  await once(response, 'end')
  return { response, body: Buffer.concat(chunks).toString() }
}

async function listen (t: TapTest, app: ReturnType<typeof Fastify>): Promise<number> {
  t.teardown(() => app.close())
  await app.listen({ port: 0, host: '127.0.0.1' })
  return (app.server.address() as AddressInfo).port
}

test('fastify\'s trailers (lib/reply.js): Trailer joined by spaces, a failed callback left out, addTrailers called once', async (t) => {
  const app = Fastify()
  const added: unknown[] = []
  app.get('/', async (_request, reply) => {
    const raw = reply.raw
    const addTrailers = raw.addTrailers
    raw.addTrailers = function (trailers) {
      added.push(trailers)
      addTrailers.call(this, trailers)
    }
    reply.trailer('content-digest', (_reply, _payload, done) => { done(null, 'x') })
    reply.trailer('repr-digest', (_reply, _payload, done) => { done(new Error('unknown')) })
    reply.trailer('x-other', (_reply, _payload, done) => { done(null, 'z') })
    return 'body'
  })
  const { response, body } = await get(await listen(t, app), '/')
  t.equal(body, 'body')
  t.equal(response.headers.trailer, 'content-digest repr-digest x-other', 'the names joined by spaces (RFC 9110 §6.6.2: commas)')
  t.same(response.trailers, { 'content-digest': 'x', 'x-other': 'z' }, 'the failed one left out')
  t.same(added, [{ 'content-digest': 'x', 'x-other': 'z' }], 'one call with every trailer')
})

test('@fastify/static\'s file stream is still opening at the first onSend hook; its \'open\' event follows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'upstream-static-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'f.txt'), 'file')
  const app = Fastify()
  await app.register(fastifyStatic, { root: dir })
  const seen: Array<{ pending: boolean, opened: boolean }> = []
  app.addHook('onSend', async (_request, _reply, payload) => {
    const stream = payload as ReadStream
    const pending = stream.pending
    await once(stream, 'open')
    seen.push({ pending, opened: !stream.pending })
    return payload
  })
  const res = await app.inject('/f.txt')
  t.teardown(() => app.close())
  t.equal(res.body, 'file')
  t.same(seen, [{ pending: true, opened: true }])
})

test('fastify runs onRoute hooks inside route() and reads the route\'s hook lists at preReady (lib/route.js)', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  const calls: string[] = []
  const named = (name: string) => (_request: unknown, _reply: unknown, done: () => void): void => {
    calls.push(name)
    done()
  }
  app.addHook('onRoute', (routeOptions: RouteOptions) => {
    calls.push(`onRoute ${routeOptions.url}`)
    // After route() returns: the list fastify runs is the one set here.
    queueMicrotask(() => { routeOptions.onRequest = [named('queued'), named('own')] })
  })
  app.post('/a', { onRequest: named('own') }, async () => 'a')
  calls.push('route() returned')
  const res = await app.inject({ method: 'POST', url: '/a' })
  t.equal(res.body, 'a')
  t.same(calls, ['onRoute /a', 'route() returned', 'queued', 'own'])
})
