// HTTP/2 (h2c: cleartext, for clients with prior knowledge; use `https` with
// key and cert for browsers): digests of a streamed response as trailers, and
// request verification without Content-Length.
// Run (a clone of the repository): npm run build && node examples/http2.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/http2.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields fastify
import Fastify from 'fastify'
import { Readable } from 'node:stream'
import digestFields from 'fastify-digest-fields'

const app = Fastify({ http2: true })
await app.register(digestFields, { contentDigest: true, reprDigest: true })

app.get('/stream', async (request, reply) => {
  const lines = Array.from({ length: 5 }, (_, i) => `line ${i + 1}\n`)
  return reply.type('text/plain').send(Readable.from(lines))
})
app.post('/echo', async (request) => ({ verification: request.digestVerification }))

await app.listen({ port: 3000 })
