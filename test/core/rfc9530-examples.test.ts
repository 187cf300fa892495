// RFC 9530 Appendix B response examples, byte for byte, in strict mode (the
// RFC's own semantics). An inconsistency in the RFC's text is avoided:
// B.11's trailer value has one '=' of padding, not two.
import { test } from 'tap'
import { Readable } from 'node:stream'
import { buildApp, rawExchange } from '../helpers'

const ITEM = '{"hello": "world"}\n'
const RK = 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:'
const EMPTY = 'sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:'

async function itemsApp (t: Parameters<typeof buildApp>[0]): Promise<Awaited<ReturnType<typeof buildApp>>> {
  const app = await buildApp(t, { strict: true, reprDigest: true })
  app.get('/items/123', async (_req, reply) => reply.type('application/json').send(ITEM))
  // The RFC's three chunks, a few milliseconds apart: Node.js 26 writes
  // what a stream yields within one tick as one chunk.
  async function * chunks (): AsyncGenerator<string> {
    for (const chunk of ['{"hello"', ': "world', '"}\n']) {
      yield chunk
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  }
  app.get('/items/chunked', async (_req, reply) => reply.type('application/json').send(Readable.from(chunks())))
  return app
}

test('B.1: the server returns the full representation data', async (t) => {
  const app = await itemsApp(t)
  const res = await app.inject('/items/123')
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.headers['content-length'], '19')
  t.equal(res.headers['repr-digest'], RK)
  t.equal(res.body, ITEM)
})

test('B.2: the server does not return representation data (HEAD)', async (t) => {
  const app = await buildApp(t, { strict: true, reprDigest: true, contentDigest: true })
  app.get('/items/123', async (_req, reply) => reply.type('application/json').send(ITEM))
  const res = await app.inject({ method: 'HEAD', url: '/items/123' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['repr-digest'], RK)
  t.equal(res.headers['content-digest'], EMPTY)
  t.equal(res.body, '')
})

test('B.11: trailer fields and transfer coding, on the wire', async (t) => {
  const app = await itemsApp(t)
  const raw = await rawExchange(app, 'GET /items/chunked HTTP/1.1\r\nHost: foo.example\r\nTE: trailers\r\nConnection: close\r\n\r\n')
  const [head, ...rest] = raw.split('\r\n\r\n')
  const lines = (head as string).split('\r\n')
  t.equal(lines[0], 'HTTP/1.1 200 OK')
  t.ok(lines.some((l) => l.startsWith('content-type: application/json')))
  t.ok(lines.includes('transfer-encoding: chunked'))
  t.ok(lines.includes('trailer: repr-digest'))
  t.notOk(lines.some((l) => /^content-length:/i.test(l)))
  t.equal(rest.join('\r\n\r\n'), `8\r\n{"hello"\r\n8\r\n: "world\r\n3\r\n"}\n\r\n0\r\nrepr-digest: ${RK}\r\n\r\n`)
})
