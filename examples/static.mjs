// @fastify/static with staticHeaders: HEAD and 206 responses carry the whole
// file's Repr-Digest. Works with @fastify/static 8, 9 and 10.
// Run (a clone of the repository): npm run build && node examples/static.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/static.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields @fastify/compress @fastify/static fastify
import { fileURLToPath } from 'node:url'
import Fastify from 'fastify'
import compress from '@fastify/compress'
import serveStatic from '@fastify/static'
import digestFields, { staticHeaders } from 'fastify-digest-fields'

const root = fileURLToPath(new URL('./public/', import.meta.url))

const app = Fastify()
await app.register(compress)
await app.register(digestFields, { contentDigest: true, reprDigest: true })

// With headers of your own: call staticHeaders with the same arguments.
// @fastify/static 10 passes the reply, 8 and 9 the raw response: `res.raw`
// is the raw response of a reply, undefined on a raw response.
await app.register(serveStatic, {
  root,
  setHeaders (res, path, stat) {
    staticHeaders(res, path, stat)
    ;(res.raw ?? res).setHeader('x-mine', '1')
  }
})

// staticHeaders alone.
await app.register(serveStatic, {
  root,
  prefix: '/plain/',
  decorateReply: false,
  setHeaders: staticHeaders
})

await app.listen({ port: 3000 })
