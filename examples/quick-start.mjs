// The README's quick start: @fastify/compress and fastify-digest-fields.
// Run (a clone of the repository): npm run build && node examples/quick-start.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/quick-start.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields @fastify/compress fastify
// server.mjs (ES module: top-level await). CommonJS: `const digestFields =
// require('fastify-digest-fields')`, and the awaits inside an async function.
import Fastify from 'fastify'
import compress from '@fastify/compress'
import digestFields from 'fastify-digest-fields'

const app = Fastify()
await app.register(compress)           // either order works
await app.register(digestFields, {
  contentDigest: true,                 // send Content-Digest even when not asked
  reprDigest: true                     // send Repr-Digest even when not asked
})

// Declare routes after `await app.register(...)`: the plugin sees routes
// through onRoute, which only reaches routes declared after it is loaded.
app.get('/items', async () => ({ items: Array.from({ length: 200 }, (_, id) => ({ id })) }))
await app.listen({ port: 3000 })
