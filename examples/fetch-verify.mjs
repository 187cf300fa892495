// A fetch client checking a response's Repr-Digest. fetch decodes gzip and br
// before the script sees the body, so only a digest of the decoded bytes can
// be checked here: Repr-Digest in the default mode (not strict: true).
// Run against examples/quick-start.mjs: node examples/fetch-verify.mjs http://localhost:3000/items
// Installed as a package: node node_modules/fastify-digest-fields/examples/fetch-verify.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields
import { createHash } from 'node:crypto'
import { parseDigestField } from 'fastify-digest-fields'

const url = process.argv[2] ?? process.env.URL ?? 'http://localhost:3000/items'

const res = await fetch(url, { headers: { 'want-repr-digest': 'sha-256=10' } })
const body = Buffer.from(await res.arrayBuffer())   // decoded bytes
const expected = parseDigestField(res.headers.get('repr-digest'))?.get('sha-256')
const actual = createHash('sha256').update(body).digest()
if (expected === undefined) throw new Error('no sha-256 Repr-Digest in the response')
if (!actual.equals(expected)) throw new Error('Repr-Digest mismatch: the body was changed on the way')
console.log(`Repr-Digest verified: ${body.length} bytes, content-encoding ${res.headers.get('content-encoding') ?? 'none'}`)
