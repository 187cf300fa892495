// Signed responses (RFC 9421), as FAPI 2.0 Message Signing asks of a resource
// server: each response is signed over its status, Content-Type, its
// Content-Digest and the request's Content-Digest ("content-digest";req,
// RFC 9421 §2.4), so the signature binds the answer to the request it
// answers, and both bodies through their digests.
// Run (a clone of the repository): npm run build && node examples/signed-response.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/signed-response.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields fastify http-message-signatures
// then: node examples/verify-signed-response.mjs http://localhost:3000
//
// The plugin computes Content-Digest of the bytes sent and calls
// onDigestFields with it before the header section is written; the hook
// signs with http-message-signatures and returns Signature and
// Signature-Input, which go out with the digests. A hook that fails: the
// response is the error handler's 500, never an unsigned 200.
//
// Key: RESPONSE_KEY names a JSON file { keyid, privateKey, publicKey } (PEM,
// Ed25519); without it, a demo key is generated at startup into a file of
// os.tmpdir(), where the client reads its public half.
import Fastify from 'fastify'
import digestFields from 'fastify-digest-fields'
import { createSigner, httpbis } from 'http-message-signatures'
import { generateKeyPairSync } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const keyFile = process.env.RESPONSE_KEY ?? join(tmpdir(), 'fastify-digest-fields-demo-response-key.json')
if (!existsSync(keyFile)) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519')
  writeFileSync(keyFile, JSON.stringify({
    keyid: 'https://api.example/keys/response-1',
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }),
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' })
  }), { mode: 0o600 })
}
const { keyid, privateKey } = JSON.parse(readFileSync(keyFile, 'utf8'))
const key = createSigner(privateKey, 'ed25519', keyid)

const app = Fastify()
// Content-Digest on every response; a request's Content-Digest is checked
// against its body before the handler runs (a mismatch: 400, signed too).
// `fields` holds the digest fields as they will be sent. Behind a proxy, set
// Fastify's trustProxy, so that request.protocol and request.host give the
// target URI the client used.
await app.register(digestFields, {
  contentDigest: true,
  async onDigestFields (request, reply, fields) {
    const contentDigest = fields['content-digest']
    if (contentDigest === undefined) return // no content to bind (a 204, a 304)
    const components = ['@status', 'content-type', 'content-digest']
    const requested = request.headers['content-digest']
    if (requested !== undefined) components.push('content-digest;req')
    const headers = Object.fromEntries([['content-type', String(reply.getHeader('content-type'))], ['content-digest', contentDigest]])
    const signed = await httpbis.signMessage({ key, name: 'sig1', fields: components }, { status: reply.statusCode, headers }, {
      method: request.method,
      url: new URL(request.url, `${request.protocol}://${request.host}`),
      headers: requested === undefined ? {} : { 'content-digest': requested }
    })
    return { 'signature-input': signed.headers['Signature-Input'], signature: signed.headers.Signature }
  }
})

app.post('/payments', { digest: { verify: 'required' } }, async (request, reply) => {
  return reply.code(201).send({ id: 'pay-1', amount: request.body.amount, status: 'accepted' })
})

app.get('/payments/pay-1', async () => ({ id: 'pay-1', status: 'settled' }))

await app.listen({ port: 3000 })
