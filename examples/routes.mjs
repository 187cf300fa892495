// Per-route options, live streams, declared digests and reply.digestsOmitted.
// Run (a clone of the repository): npm run build && node examples/routes.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/routes.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields fastify
import Fastify from 'fastify'
import { Readable } from 'node:stream'
import { createHash } from 'node:crypto'
import digestFields from 'fastify-digest-fields'

const app = Fastify({ logger: { level: 'warn' } })
await app.register(digestFields, { contentDigest: true, reprDigest: true })

// Digests asked for or configured but not sent (a live stream without
// TE: trailers): the plugin warns once per route; each response says so.
app.addHook('onResponse', async (request, reply) => {
  if (reply.digestsOmitted) request.log.info(reply.digestsOmitted)
  // { reason: 'live-stream', fields: ['Content-Digest', 'Repr-Digest'] }
})

const report = async () => ({ total: 42 })
const ticks = async (request, reply) => {
  // An event stream: live, never held back for a digest.
  const events = (async function * () {
    for (let i = 1; i <= 3; i++) {
      yield `data: tick ${i}\n\n`
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })()
  return reply.type('text/event-stream').send(Readable.from(events))
}
const upload = async (request) => ({ verification: request.digestVerification })
const health = async () => 'ok'

app.get('/report', { digest: { contentDigest: 'sha-512' } }, report)
app.get('/ticks', { digest: { live: true } }, ticks)
app.post('/upload', { digest: { verify: 'required' } }, upload)
app.get('/health', { digest: false }, health)

// A stored checksum: declared, not hashed (used for Repr-Digest, HEAD, 206
// and the 406 rule).
const stored = { body: 'stored document\n' }
stored.sha256 = createHash('sha256').update(stored.body).digest()
app.get('/stored', async (request, reply) => {
  reply.setReprDigest({ 'sha-256': stored.sha256 })
  return reply.type('text/plain').send(stored.body)
})

await app.listen({ port: 3000 })
