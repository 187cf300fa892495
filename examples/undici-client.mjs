// An undici client checking every response's digests as the body streams.
// Run against examples/quick-start.mjs: node examples/undici-client.mjs http://localhost:3000/items
// Installed as a package: node node_modules/fastify-digest-fields/examples/undici-client.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields undici
import { Agent, fetch, request } from 'undici'
import { digestInterceptor } from 'fastify-digest-fields/client'

const url = process.argv[2] ?? process.env.URL ?? 'http://localhost:3000/items'

const dispatcher = new Agent().compose(digestInterceptor({
  verify: 'required',   // a response without a usable digest fails too
  want: 'sha-256'       // sends Want-Content-Digest and Want-Repr-Digest
}))

// undici.request does not decode: Content-Digest is checked over the gzip
// bytes received, Repr-Digest over them or over the decoded JSON.
const res = await request(url, { dispatcher, headers: { 'accept-encoding': 'gzip' } })
const zipped = Buffer.from(await res.body.arrayBuffer())   // rejects on a mismatch

// fetch decodes after the interceptor; a failed check rejects the read with
// TypeError('terminated'), the digest error as its cause.
const items = await (await fetch(url, { dispatcher })).json()

console.log(`verified: ${zipped.length} gzip bytes (${res.headers['content-encoding']}), ${items.items.length} items`)
