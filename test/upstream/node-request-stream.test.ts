// Canaries: what lib/core/source-tap.ts and lib/core/chunk-keeper.ts rely on in Node.js's request streams
// (docs/design.md, "What this plugin relies on"). Each test fails when upstream changes what it pins; none loads the
// plugin. Plain node:http and node:http2 servers; light-my-request through fastify's inject.
import { test } from 'tap'
import Fastify from 'fastify'
import { once } from 'node:events'
import { createServer, request as h1Request, type IncomingMessage } from 'node:http'
import { connect as h2Connect, createServer as createH2Server, type Http2ServerRequest } from 'node:http2'
import { connect as tcpConnect, type AddressInfo, type Server } from 'node:net'
import type { Readable } from 'node:stream'
import { recordPushes, type Pushes } from '../helpers'

type TapTest = Parameters<Parameters<typeof test>[0]>[0]

async function listening (t: TapTest, server: Server): Promise<number> {
  t.teardown(() => { server.close() })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

test('node:http pushes each chunk of a request body and its end through the request\'s own push', async (t) => {
  let recorded: Pushes | null = null
  const server = createServer((request, response) => {
    recorded = recordPushes(request)
    request.resume().once('end', () => response.end('done'))
  })
  const port = await listening(t, server)
  const client = h1Request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-length': '6' } })
  client.flushHeaders()
  await once(server, 'request')
  client.write('abc')
  await (recorded as unknown as Pushes).first
  client.end('def')
  const [response] = await once(client, 'response') as [IncomingMessage]
  response.resume()
  await once(response, 'end')
  t.same((recorded as unknown as Pushes).pushed, ['abc', 'def', null])
})

test('node:http2\'s compatibility layer pushes each chunk of a request body and its end through the request\'s own push', async (t) => {
  let recorded: Pushes | null = null
  const server = createH2Server((request: Http2ServerRequest, response) => {
    recorded = recordPushes(request)
    request.resume().once('end', () => response.end('done'))
  })
  const port = await listening(t, server as unknown as Server)
  const session = h2Connect(`http://127.0.0.1:${port}`)
  t.teardown(() => session.close())
  const stream = session.request({ ':method': 'POST', ':path': '/' })
  await once(server, 'request')
  stream.write('abc')
  await (recorded as unknown as Pushes).first
  stream.end('def')
  stream.resume()
  await once(stream, 'end')
  const { pushed } = recorded as unknown as Pushes
  t.same(pushed.slice(0, 3), ['abc', 'def', null])
  t.ok(pushed.slice(3).every((chunk) => chunk === null), 'the end may be pushed again, never a chunk after it')
})

test('light-my-request (fastify\'s inject) pushes the payload and its end through the request\'s own push', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  let pushed: Array<string | null> = []
  app.addHook('onRequest', (request, _reply, done) => {
    pushed = recordPushes(request.raw).pushed
    done()
  })
  app.post('/', async (request) => request.body)
  const res = await app.inject({ method: 'POST', url: '/', headers: { 'content-type': 'text/plain' }, payload: 'abcdef' })
  t.equal(res.body, 'abcdef')
  t.same(pushed, ['abcdef', null])
})

test('node:http destroys a request cut off mid-body through its _destroy, with an error that has no statusCode', async (t) => {
  const destroyed: Array<Error | null> = []
  let told = (): void => {}
  const cut = new Promise<void>((resolve) => { told = resolve })
  const server = createServer((request) => {
    const target = request as IncomingMessage & { _destroy: Readable['_destroy'] }
    const destroy = target._destroy
    target._destroy = function (error, callback) {
      destroyed.push(error)
      told()
      destroy.call(this, error, callback)
    }
    request.resume()
  })
  const port = await listening(t, server)
  const socket = tcpConnect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc')
  await once(server, 'request')
  socket.destroy()
  await cut
  t.equal(destroyed.length, 1)
  const error = destroyed[0] as Error & { statusCode?: unknown }
  t.type(error, Error)
  t.equal(error.statusCode, undefined, 'fastify\'s parsers give it 400 (lib/content-type-parser.js rawBody); the tap does too')
})

test('a body that arrived with the headers, unread: _readableState.ended is set, the bytes are buffered', async (t) => {
  let request: IncomingMessage | null = null
  let pushes: Pushes | null = null
  const server = createServer((incoming) => {
    request = incoming
    pushes = recordPushes(incoming)
  })
  const port = await listening(t, server)
  const socket = tcpConnect(port, '127.0.0.1')
  t.teardown(() => socket.destroy())
  await once(socket, 'connect')
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc')
  await once(server, 'request')
  const raw = request as unknown as IncomingMessage & { _readableState: { ended: boolean } }
  await (pushes as unknown as Pushes).ended
  t.equal(raw._readableState.ended, true)
  t.equal(raw.readableLength, 3)
  t.equal(raw.readableEnded, false, 'no reader yet: \'end\' not emitted')
})
