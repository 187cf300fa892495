// A signed response verified whole (RFC 9421 with RFC 9530), with undici:
// digestInterceptor() adds the request's Content-Digest and checks the
// response's against its bytes as they stream; http-message-signatures
// checks the signature over @status, Content-Type, Content-Digest and the
// request's Content-Digest ("content-digest";req). Only both together
// authenticate the body: the signature covers the digest, the digest the
// bytes.
// Run against examples/signed-response.mjs (it wrote the demo key):
//   node examples/verify-signed-response.mjs http://localhost:3000
// Installed as a package: node node_modules/fastify-digest-fields/examples/verify-signed-response.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields http-message-signatures structured-headers undici
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createVerifier, httpbis } from 'http-message-signatures'
import { parseDictionary } from 'structured-headers'
import { Agent, request } from 'undici'
import { digestInterceptor } from 'fastify-digest-fields/client'

const REQUIRED = ['@status', 'content-type', 'content-digest']

/**
 * The response to `method url` (with `body`, a string), its signature
 * verified with `publicKey` (PEM, Ed25519) and its body read through the
 * digest check. Resolves with { status, body }; rejects when the signature
 * is missing, covers too little or does not verify, or when the body does
 * not match the signed Content-Digest (FST_DIGEST_RESPONSE_MISMATCH).
 */
export async function signedRequest (url, { method = 'GET', body, publicKey, dispatcher }) {
  const headers = body === undefined ? {} : { 'content-type': 'application/json' }
  // verify: 'required': a response without Content-Digest is refused, so a
  // signature over a missing digest never passes for a signed body.
  const agent = dispatcher ?? new Agent().compose(digestInterceptor({ verify: 'required' }))
  const res = await request(url, { method, headers, body, dispatcher: agent })
  // The request as sent, digest included: undici's interceptors do not hand
  // it back, so its Content-Digest is computed as the interceptor does.
  const sent = { method, url, headers: { ...headers } }
  if (body !== undefined) sent.headers['content-digest'] = `sha-256=:${await sha256(body)}:`

  const input = parseDictionary(String(res.headers['signature-input'] ?? ''))
  const [components] = input.get('sig1') ?? [[]]
  const covered = components.map(([name, params]) => params.has('req') ? `${name};req` : name)
  const required = body === undefined ? REQUIRED : [...REQUIRED, 'content-digest;req']
  const missing = required.filter((name) => !covered.includes(name))
  if (missing.length > 0) {
    await res.body.dump()
    throw new Error(`the response signature does not cover ${missing.join(', ')}`)
  }
  const verified = await httpbis.verifyMessage({
    keyLookup: async () => ({ algs: ['ed25519'], verify: createVerifier(publicKey, 'ed25519') }),
    maxAge: 300
  }, { status: res.statusCode, headers: res.headers }, sent)
  if (verified !== true) {
    await res.body.dump()
    throw new Error('the response signature does not verify')
  }
  // The signature holds: the body must match the signed digest. The
  // interceptor fails the body's stream at its end otherwise.
  return { status: res.statusCode, body: await res.body.text() }
}

async function sha256 (text) {
  const { createHash } = await import('node:crypto')
  return createHash('sha256').update(text).digest('base64')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const base = process.argv[2] ?? process.env.BASE_URL ?? 'http://localhost:3000'
  const keyFile = process.env.RESPONSE_KEY ?? join(tmpdir(), 'fastify-digest-fields-demo-response-key.json')
  const { publicKey } = JSON.parse(readFileSync(keyFile, 'utf8'))
  const created = await signedRequest(`${base}/payments`, { method: 'POST', body: JSON.stringify({ amount: 42 }), publicKey })
  console.log('POST /payments', created.status, created.body)
  const read = await signedRequest(`${base}/payments/pay-1`, { publicKey })
  console.log('GET /payments/pay-1', read.status, read.body)
}
