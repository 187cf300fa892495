// Signed POSTs with undici (RFC 9421): digestInterceptor() adds the
// Content-Digest, then signingInterceptor() (examples/signing-interceptor.mjs)
// signs it with the method and the target URI.
// Run against examples/signed-inbox.mjs (it wrote the demo keys):
//   node examples/signed-client.mjs http://localhost:3000 [a file to upload]
// Installed as a package: node node_modules/fastify-digest-fields/examples/signed-client.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields http-message-signatures undici
import { openAsBlob, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createSigner } from 'http-message-signatures'
import { Agent, request } from 'undici'
import { digestInterceptor } from 'fastify-digest-fields/client'
import { signingInterceptor } from './signing-interceptor.mjs'

const base = process.argv[2] ?? process.env.BASE_URL ?? 'http://localhost:3000'
const file = process.argv[3] ?? fileURLToPath(import.meta.url)
const keysFile = process.env.SIGNATURE_KEYS ?? join(tmpdir(), 'fastify-digest-fields-demo-keys.json')
const keys = Object.entries(JSON.parse(readFileSync(keysFile, 'utf8')))
  .map(([keyid, { alg, privateKey }]) => createSigner(privateKey, alg, keyid))

const activity = JSON.stringify({
  '@context': 'https://www.w3.org/ns/activitystreams',
  type: 'Create',
  actor: 'https://sender.example/users/alice',
  object: { type: 'Note', content: 'Hello, signed and digested' }
})
const post = { method: 'POST', headers: { 'content-type': 'application/activity+json' }, body: activity }

for (const key of keys) {
  // The last interceptor listed runs first on the way out: digestInterceptor()
  // adds Content-Digest, then signingInterceptor() signs it.
  const dispatcher = new Agent().compose(signingInterceptor(key), digestInterceptor())
  const res = await request(`${base}/inbox`, { dispatcher, ...post })
  console.log(`${key.alg} inbox`, res.statusCode, await res.body.text())

  // A file, as a Blob: hashed as a stream, signed, then sent as a stream.
  const blob = await openAsBlob(file, { type: 'application/octet-stream' })
  const media = await request(`${base}/media`, { dispatcher, method: 'POST', body: blob })
  console.log(`${key.alg} media`, media.statusCode, await media.body.text())
}

// The other way round: signed before the request has a Content-Digest.
const wrong = new Agent().compose(digestInterceptor(), signingInterceptor(keys[0]))
const res = await request(`${base}/inbox`, { dispatcher: wrong, ...post })
console.log('wrong order', res.statusCode, await res.body.text())
