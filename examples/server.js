'use strict'

// The demo that `npm start` runs: Fastify with @fastify/compress and
// fastify-digest-fields on 127.0.0.1, and curl commands to try against it.
// Run `npm start` (it builds dist/ first); stop it with Ctrl-C.

const { join } = require('node:path')
const { Readable } = require('node:stream')
const Fastify = require('fastify')
const compress = require('@fastify/compress')
const serveStatic = require('@fastify/static')
const digestFields = require('..')
const { staticHeaders } = digestFields

const port = Number(process.env.PORT ?? 3000)
const host = '127.0.0.1'
const base = `http://${host}:${port}`

async function main () {
  const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'warn' } })

  await app.register(compress, { threshold: 1024 })
  await app.register(digestFields, {
    algorithms: ['sha-256', 'sha-512'],
    contentDigest: true, // sent without being asked
    reprDigest: true
  })

  const items = new Map([['123', '{"hello": "world"}\n']])

  // A representation: RFC 9530 Appendix B's JSON document.
  app.get('/items/:id', async (request, reply) => {
    const item = items.get(request.params.id)
    if (item === undefined) return reply.code(404).send({ error: 'no such item' })
    return reply.type('application/json').send(item)
  })

  // A state-changing request: the plugin verifies the request's digests
  // before this handler runs; the handler sees what was verified.
  app.put('/items/:id', async (request, reply) => {
    const body = JSON.stringify(request.body) + '\n'
    items.set(request.params.id, body)
    reply.code(201).header('content-location', `/items/${request.params.id}`)
    return { stored: request.params.id, verification: request.digestVerification }
  })

  // Large enough for @fastify/compress: Repr-Digest stays that of the
  // identity text, Content-Digest covers the gzip bytes sent.
  app.get('/large', async (request, reply) => {
    return reply.type('text/plain').send('All work and no play makes Jack a dull boy.\n'.repeat(500))
  })

  // A streamed body: digests come as trailers when the client sends
  // `TE: trailers`, as headers otherwise (buffered up to maxBufferSize).
  app.get('/stream', async (request, reply) => {
    const lines = Array.from({ length: 5 }, (_, i) => `line ${i + 1}\n`)
    return reply.type('text/plain').send(Readable.from(lines))
  })

  // Files: 206 responses carry Content-Digest of the part and Repr-Digest of
  // the whole file; HEAD carries the file's Repr-Digest.
  await app.register(serveStatic, {
    root: join(__dirname, 'public'),
    prefix: '/files/',
    setHeaders: staticHeaders
  })

  await app.listen({ port, host })

  const tries = [
    ['Unsolicited digests (uncompressed: both fields equal)', `curl -si ${base}/items/123`],
    ['Ask for sha-512 (exchange 1): Content-Digest, and the unsolicited Repr-Digest with it', `curl -si ${base}/items/123 -H 'Want-Content-Digest: sha-256=1, sha-512=3'`],
    ['HEAD: Content-Digest of empty content, Repr-Digest of the JSON', `curl -sI ${base}/items/123`],
    ['Compressed: Content-Digest over gzip bytes, Repr-Digest over the text', `curl -s -o /dev/null -D - ${base}/large -H 'Accept-Encoding: gzip'`],
    ['Trailers for a streamed body (--raw shows them)', `curl -si --raw ${base}/stream -H 'TE: trailers'`],
    ['A range of a static file (RFC 9530 B.3): the part\'s Content-Digest, the file\'s Repr-Digest', `curl -si ${base}/files/hello.json -H 'Range: bytes=10-18'`],
    ['HEAD of a static file', `curl -sI ${base}/files/hello.json`],
    ['A stale Repr-Digest on GET gets 406 with the current one', `curl -si ${base}/items/123 -H 'Repr-Digest: sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:'`],
    ['Upload with a correct Content-Digest (201)', `printf '{"hello": "world"}' | curl -si -X PUT ${base}/items/7 -H 'Content-Type: application/json' -H 'Content-Digest: sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:' --data-binary @-`],
    ['Upload with a wrong Content-Digest (400 problem details)', `printf '{"hello": "woXYZ"}' | curl -si -X PUT ${base}/items/7 -H 'Content-Type: application/json' -H 'Content-Digest: sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:' --data-binary @-`]
  ]
  console.log(`fastify-digest-fields demo listening on ${base}\n`)
  for (const [what, cmd] of tries) console.log(`# ${what}\n${cmd}\n`)
  console.log('Stop with Ctrl-C.')
  return app
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
