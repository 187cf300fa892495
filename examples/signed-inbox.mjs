// HTTP Message Signatures (RFC 9421) with a body checked as it streams: an
// inbox that takes signed POSTs as Mastodon 4.5 does (rsa-v1_5-sha256 keys;
// ed25519 too). A signature covers header fields, never the body: the body
// is bound to it by a signed Content-Digest, which the plugin checks against
// the bytes as they arrive, without holding the body for it.
// Run (a clone of the repository): npm run build && node examples/signed-inbox.mjs
// Installed as a package: node node_modules/fastify-digest-fields/examples/signed-inbox.mjs, with the same arguments.
// Needs: npm i fastify-digest-fields fastify http-message-signatures structured-headers
// then: node examples/signed-client.mjs http://localhost:3000
//
// Keys: SIGNATURE_KEYS names a JSON file { keyid: { alg, publicKey,
// privateKey } } (PEM); the inbox reads the public keys, the client the
// private ones. Without it, demo keys are generated at startup into a file
// of os.tmpdir(). A real inbox fetches the public key its keyid names.
//
// The order per request: the plugin's onRequest hook (always the route's
// first) taps the body and refuses a missing Content-Digest; then
// verifySignature checks the signature from the header fields alone, before
// a byte of the body is read; the plugin checks the body at its end (a
// mismatch: 400 before the handler runs); then signedDigestVerified
// confirms that the Content-Digest the plugin verified is the signed one.
import Fastify from 'fastify'
import digestFields from 'fastify-digest-fields'
import { createVerifier, httpbis } from 'http-message-signatures'
import { parseDictionary, isInnerList } from 'structured-headers'
import { generateKeyPairSync } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

const keysFile = process.env.SIGNATURE_KEYS ?? join(tmpdir(), 'fastify-digest-fields-demo-keys.json')
if (!existsSync(keysFile)) {
  const pem = ({ publicKey, privateKey }) => ({
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }),
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' })
  })
  writeFileSync(keysFile, JSON.stringify({
    'https://sender.example/users/alice#main-key': { alg: 'rsa-v1_5-sha256', ...pem(generateKeyPairSync('rsa', { modulusLength: 2048 })) },
    'https://sender.example/users/bob#ed25519-key': { alg: 'ed25519', ...pem(generateKeyPairSync('ed25519')) }
  }), { mode: 0o600 })
}
/** keyid → what http-message-signatures verifies with. */
const keys = new Map(Object.entries(JSON.parse(readFileSync(keysFile, 'utf8')))
  .map(([keyid, { alg, publicKey }]) => [keyid, { id: keyid, algs: [alg], verify: createVerifier(publicKey, alg) }]))

// What a signature must cover, as Mastodon requires of a POST: the method,
// the target URI and Content-Digest, whole (bare, or re-serialized with
// ;sf; ;key would cover one member of it, ;bs or ;tr another value), with
// its creation time.
const COVERED = ['@method', '@target-uri', 'content-digest']
const ACCEPT_SIGNATURE = 'sig=("@method" "@target-uri" "content-digest");created'

// 401, not 400: the request may well be intact, but nothing authenticates
// its body. Accept-Signature (RFC 9421 §5.1) says what to sign.
function refuse (reply, message) {
  return reply.code(401).header('accept-signature', ACCEPT_SIGNATURE)
    .send({ statusCode: 401, error: 'Unauthorized', message })
}

/** The one signature of a Signature-Input, covering COVERED: its keyid, or why it does not suit this inbox. */
function readSignatureInput (value) {
  let inputs
  try {
    inputs = parseDictionary(value ?? '')
  } catch {
    return { problem: 'Signature-Input is not a Dictionary' }
  }
  if (inputs.size === 0) return { problem: 'the request is not signed' }
  if (inputs.size > 1) return { problem: 'one signature is expected' }
  const [input] = inputs.values()
  if (!isInnerList(input)) return { problem: 'Signature-Input is not an Inner List' }
  const [items, params] = input
  for (const name of COVERED) {
    const item = items.find(([component]) => component === name)
    if (item === undefined) return { problem: `the signature does not cover ${name}` }
    const other = [...item[1].keys()].find((param) => param !== 'sf')
    if (other !== undefined) return { problem: `the signature covers ${name} with ;${other}` }
  }
  if (!Number.isInteger(params.get('created')) || typeof params.get('keyid') !== 'string') {
    return { problem: 'the signature has no created or keyid' }
  }
  return { keyid: params.get('keyid') }
}

/**
 * onRequest, after the plugin's: the signature, from the header fields
 * alone. Behind a proxy, set Fastify's trustProxy, so that request.protocol
 * and request.host give the target URI the client signed.
 */
async function verifySignature (request, reply) {
  const { keyid, problem } = readSignatureInput(request.headers['signature-input'])
  if (problem !== undefined) return refuse(reply, problem)
  let verified
  try {
    verified = await httpbis.verifyMessage({
      keyLookup: async () => keys.get(keyid) ?? null,
      maxAge: 300,
      tolerance: 30
    }, {
      method: request.method,
      url: new URL(request.url, `${request.protocol}://${request.host}`),
      headers: request.headers
    })
  } catch (err) {
    return refuse(reply, err.message) // expired, an unsupported alg, a missing field…
  }
  if (verified !== true) return refuse(reply, 'the signature does not verify')
  request.signer = keyid
}

/**
 * Once the body is read: the plugin checked every Content-Digest the request
 * carried, the signed header field and any in a trailer. All must have
 * matched, so the signed one did: `verified` alone would also be true with
 * a signed digest of an algorithm the route does not use next to a matching
 * one in an unsigned trailer.
 */
function signedDigestVerified (request) {
  const checked = request.digestVerification?.fields.filter((f) => f.field === 'Content-Digest') ?? []
  return checked.length > 0 && checked.every((f) => f.ok)
}

const app = Fastify()
await app.register(digestFields)
app.decorateRequest('signer', null)
app.addContentTypeParser(['application/activity+json', 'application/ld+json'], { parseAs: 'string' },
  app.getDefaultJsonParser('error', 'error'))
// A media upload reaches its handler as a stream.
app.addContentTypeParser('application/octet-stream', (request, payload, done) => done(null, payload))

const signed = { digest: { verify: 'required' }, onRequest: verifySignature }

app.post('/inbox', {
  ...signed,
  preHandler: async (request, reply) => {
    if (!signedDigestVerified(request)) return refuse(reply, 'the signed Content-Digest was not verified')
  }
}, async (request, reply) => {
  // The activity as parsed, signed and verified: accept it.
  return reply.code(202).send({ accepted: request.body.type, signer: request.signer })
})

app.post('/media', signed, async (request, reply) => {
  let size = 0
  // Stored as it arrives (here, counted). A mismatch errors the stream at its
  // end, and the client gets the plugin's 400.
  await pipeline(request.body, new Writable({
    write (chunk, encoding, callback) {
      size += chunk.length
      callback()
    }
  }))
  if (!signedDigestVerified(request)) return refuse(reply, 'the signed Content-Digest was not verified')
  return { size, signer: request.signer }
})

await app.listen({ port: 3000 })
