// Signature-based SRI: the page names the public key in its script's
// integrity attribute; Chromium asks for a signature (Accept-Signature) and
// runs the script only when it verifies and the body matches the signed
// Unencoded-Digest, whatever the content coding.
// The key: SRI_KEY (a PEM file of an Ed25519 private key), else one made at start.
// Run (a clone of the repository): npm run build && node examples/sri.mjs, then open http://localhost:3000/
// Installed as a package: node node_modules/fastify-digest-fields/examples/sri.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields @fastify/compress fastify
import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto'
import { readFileSync } from 'node:fs'
import Fastify from 'fastify'
import compress from '@fastify/compress'
import digestFields from 'fastify-digest-fields'

const privateKey = process.env.SRI_KEY
  ? createPrivateKey(readFileSync(process.env.SRI_KEY))
  : generateKeyPairSync('ed25519').privateKey

// What the page names: the base64 of the raw 32-byte public key (the end of its SPKI DER).
const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' })
const keyid = spki.subarray(-32).toString('base64')

const app = Fastify()
await app.register(compress)
await app.register(digestFields, { integrityKeys: [privateKey] })

app.get('/', (request, reply) => {
  reply.type('text/html').send(`<!doctype html><body>
<script src="/app.js" integrity="ed25519-${keyid}" crossorigin="anonymous"></script>`)
})
app.get('/app.js', (request, reply) => {
  reply.type('text/javascript').send('document.body.append("the signed script ran")')
})

await app.listen({ port: 3000 })
