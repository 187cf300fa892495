// A fetch client sending Content-Digest with a JSON upload.
// Run against examples/upload.mjs: node examples/fetch-upload.mjs http://localhost:3000
// Installed as a package: node node_modules/fastify-digest-fields/examples/fetch-upload.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields
import { createHash } from 'node:crypto'

const base = process.argv[2] ?? process.env.BASE_URL ?? 'http://localhost:3000'

// Hash the exact bytes you send.
const body = Buffer.from(JSON.stringify({ title: 'New Title' }))
const digest = createHash('sha256').update(body).digest('base64')
const res = await fetch(`${base}/items`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', 'content-digest': `sha-256=:${digest}:` },
  body
})
console.log(res.status, await res.text())
