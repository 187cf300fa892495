// Signature-based SRI (WICG signature-based-sri): the options, the profile's
// core (lib/core/integrity.ts) and what responses carry. Every signature
// is checked against an RFC 9421 signature base built here from the
// response's own header fields, with node:crypto, and with
// http-message-signatures' verifier.
import { test } from 'tap'
import { createHash, createSecretKey, generateKeyPairSync, verify, type KeyObject } from 'node:crypto'
import crypto = require('node:crypto')
import { syncBuiltinESMExports } from 'node:module'
import { Readable } from 'node:stream'
import { gunzipSync } from 'node:zlib'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import Fastify, { type FastifyInstance } from 'fastify'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import { createSigner, createVerifier, httpbis } from 'http-message-signatures'
import { parseDictionary, serializeDictionary } from 'structured-headers'
import type { FastifyDigestFieldsOptions } from '../../types/index'
import digestFields = require('../../lib/index')
import { normalizeOptions, normalizeRouteOptions } from '../../lib/plugin/plugin-options'
import {
  heldKeyOf, requestedSignatures, signed, SIGNATURE_CACHE_SIZE, signaturesFor, sriAlgorithms, signatureFields, type IntegrityKeys, type IntegritySignature
} from '../../lib/core/integrity'
import { buildApp, sf } from '../helpers'

const ed = generateKeyPairSync('ed25519')
const other = generateKeyPairSync('ed25519')
const stranger = generateKeyPairSync('ed25519')

/** The keyid a page names: the base64 of the raw 32-byte public key (the last 32 bytes of its SPKI DER). */
function keyid (publicKey: KeyObject): string {
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
}
const KEY = keyid(ed.publicKey)
const OTHER = keyid(other.publicKey)
const STRANGER = keyid(stranger.publicKey)

/** Accept-Signature as Chromium sends it for `integrity="ed25519-KEY"`. */
function ask (key: string, label = 'sig0'): string {
  return `${label}=("unencoded-digest";sf);keyid="${key}";tag="ed25519-integrity"`
}

const PARAMS = (key: string): string => `("unencoded-digest";sf);keyid="${key}";tag="ed25519-integrity"`

/**
 * Check the response's signature under `label` with `publicKey`, from a
 * signature base built here (RFC 9421 §2.5) out of the response's fields:
 * the Unencoded-Digest value re-serialized as a Dictionary (§2.1.1, `sf`),
 * and the Signature-Input member as sent.
 */
function verifiedByHand (headers: IncomingHttpHeaders | OutgoingHttpHeaders, label: string, publicKey: KeyObject): boolean {
  const unencoded = serializeDictionary(parseDictionary(headers['unencoded-digest'] as string))
  const inputs = parseDictionary(headers['signature-input'] as string)
  const signatures = parseDictionary(headers['signature'] as string)
  const input = inputs.get(label)
  const signature = signatures.get(label)
  if (input === undefined || signature === undefined) return false
  const params = serializeDictionary(new Map([['x', input]])).slice(2)
  const base = `"unencoded-digest";sf: ${unencoded}\n"@signature-params": ${params}`
  return verify(null, Buffer.from(base), publicKey, Buffer.from(signature[0] as ArrayBuffer))
}

/**
 * The same check by http-message-signatures (RFC 9421 §3.2), every signature
 * of the response, each with the key of `keys` its keyid names.
 */
async function verifiedByLibrary (headers: IncomingHttpHeaders | OutgoingHttpHeaders, ...keys: KeyObject[]): Promise<boolean | null> {
  const response = { status: 200, headers: headers as Record<string, string> }
  return await httpbis.verifyMessage({
    all: true,
    keyLookup: async (params) => {
      const key = keys.find((k) => keyid(k) === params.keyid) ?? keys[0] as KeyObject
      return { id: keyid(key), algs: ['ed25519'], verify: createVerifier(key, 'ed25519') }
    }
  }, response)
}

const SCRIPT = `console.log(${JSON.stringify('x'.repeat(2000))})\n`

async function app (t: Parameters<typeof buildApp>[0], opts: FastifyDigestFieldsOptions = { integrityKeys: [ed.privateKey] }): Promise<FastifyInstance> {
  const server = await buildApp(t, opts)
  server.get('/s.js', async (_req, reply) => reply.type('text/javascript').send(SCRIPT))
  return server
}

test('integrityKeys: Ed25519 private keys, as KeyObjects or PEM; anything else is refused at registration, naming the option', async (t) => {
  const pem = ed.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  const fromPem = normalizeOptions({ integrityKeys: pem }).integrityKeys
  t.same([...fromPem.values()].map((k) => k.keyid), [KEY], 'one PEM string: its keyid is the raw public key\'s base64')
  t.same([...normalizeOptions({ integrityKeys: [ed.privateKey, other.privateKey] }).integrityKeys.values()].map((k) => k.keyid), [KEY, OTHER])
  t.equal(normalizeOptions({}).integrityKeys.size, 0, 'none by default')
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
  const bad: Array<[string, unknown, RegExp]> = [
    ['an RSA key', rsa.privateKey, /a rsa key, not Ed25519/],
    ['an Ed25519 public KeyObject', ed.publicKey, /a public key/],
    ['a secret key', createSecretKey(Buffer.alloc(32)), /a secret key, not Ed25519/],
    ['an Ed25519 public key in PEM', ed.publicKey.export({ type: 'spki', format: 'pem' }), /a public key/],
    ['a string that is no PEM', 'not a key', /no PEM private key/],
    ['a number', 42, /got number/],
    ['an empty list', [], /expected a key or a non-empty list of keys, got an empty list/],
    ['null in the list', [null], /got null/],
    ['a key listed twice', [ed.privateKey, pem], /listed twice/]
  ]
  for (const [name, value, message] of bad) {
    t.throws(() => normalizeOptions({ integrityKeys: value as never }), { code: 'FST_DIGEST_INVALID_OPTION', message: /"integrityKeys"/ }, name)
    t.throws(() => normalizeOptions({ integrityKeys: value as never }), { message }, `${name}: why`)
  }
  t.throws(() => normalizeOptions({ algorithms: ['md5'], integrityKeys: ed.privateKey }),
    { code: 'FST_DIGEST_INVALID_OPTION', message: /"integrityKeys".*sha-256 or sha-512/ }, 'no sha-2 enabled: nothing to sign')
  await t.rejects(async () => { await buildApp(t, { integrityKeys: ed.publicKey as never }) }, { code: 'FST_DIGEST_INVALID_OPTION' }, 'register() fails')
})

test('integritySignature: true, a keyid or { keyid, label }, at plugin and route level; checked against integrityKeys', async (t) => {
  const keys = [ed.privateKey, other.privateKey]
  t.equal(normalizeOptions({ integrityKeys: keys }).integritySignature, null, 'off by default')
  t.match(normalizeOptions({ integrityKeys: keys, integritySignature: true }).integritySignature, { label: 'sig0', keyid: KEY }, 'true: the first key, sig0')
  t.match(normalizeOptions({ integrityKeys: keys, integritySignature: OTHER }).integritySignature, { label: 'sig0', keyid: OTHER }, 'a keyid')
  t.match(normalizeOptions({ integrityKeys: keys, integritySignature: OTHER.replace(/=+$/, '') }).integritySignature, { keyid: OTHER }, 'a keyid without padding: the held key\'s')
  t.match(normalizeOptions({ integrityKeys: keys, integritySignature: { label: 'sri' } }).integritySignature, { label: 'sri', keyid: KEY }, '{ label }')
  t.match(normalizeOptions({ integrityKeys: keys, integritySignature: { keyid: OTHER, label: 'b' } }).integritySignature, { label: 'b', keyid: OTHER }, '{ keyid, label }')
  t.equal(normalizeOptions({ integrityKeys: keys, integritySignature: false }).integritySignature, null, 'false')
  const bad: Array<[string, FastifyDigestFieldsOptions, RegExp]> = [
    ['no keys', { integritySignature: true }, /needs a key: set integrityKeys/],
    ['a keyid not held', { integrityKeys: keys, integritySignature: STRANGER }, /the keyid of a key of integrityKeys/],
    ['not a keyid', { integrityKeys: keys, integritySignature: 5 as never }, /got number/],
    ['a label that is no Dictionary key', { integrityKeys: keys, integritySignature: { label: 'Sig 0' } }, /Dictionary key/],
    ['an unknown key', { integrityKeys: keys, integritySignature: { key: KEY } as never }, /unknown key "key"/]
  ]
  for (const [name, opts, message] of bad) {
    t.throws(() => normalizeOptions(opts), { code: 'FST_DIGEST_INVALID_OPTION', message: /"integritySignature"/ }, name)
    t.throws(() => normalizeOptions(opts), { message }, `${name}: why`)
  }
  const global = normalizeOptions({ integrityKeys: keys, integritySignature: true })
  t.equal(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: {} } as never)?.integritySignature, global.integritySignature, 'a route keeps the plugin\'s')
  t.equal(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: { integritySignature: false } } as never)?.integritySignature, null, 'a route turns it off')
  t.match(normalizeRouteOptions(global, { method: 'GET', url: '/', digest: { integritySignature: OTHER } } as never)?.integritySignature, { keyid: OTHER }, 'a route picks another key')
  t.throws(() => normalizeRouteOptions(normalizeOptions({}), { method: 'GET', url: '/x', digest: { integritySignature: true } } as never),
    { code: 'FST_DIGEST_INVALID_ROUTE_OPTION', message: /GET \/x: integritySignature: needs a key/ }, 'route level, no keys')
  t.throws(() => normalizeRouteOptions(global, { method: 'GET', url: '/x', digest: { integrityKeys: keys } } as never),
    { code: 'FST_DIGEST_INVALID_ROUTE_OPTION', message: /not a route-level option/ }, 'integrityKeys is plugin-level')
})

test('the profile\'s core: which Accept-Signature members are answered, the algorithms signed, the labels', async (t) => {
  const keys: IntegrityKeys = new Map([ed.privateKey, other.privateKey].map((k) => {
    const held = heldKeyOf(k) as Exclude<ReturnType<typeof heldKeyOf>, string>
    return [held.keyid.replace(/=+$/, ''), held]
  }))
  const labels = (value: string | string[] | undefined): string[] => requestedSignatures(value, keys).map((s) => `${s.label}:${s.keyid}`)
  t.same(labels(ask(KEY)), [`sig0:${KEY}`], 'Chromium\'s request')
  t.same(labels(ask(KEY, 'x')), [`x:${KEY}`], 'the label asked for')
  t.same(labels(ask(KEY.replace(/=+$/, ''))), [`sig0:${KEY.replace(/=+$/, '')}`], 'a keyid without padding: answered as asked')
  t.same(labels(`${ask(STRANGER)}, ${ask(OTHER, 'sig1')}`), [`sig1:${OTHER}`], 'a key not held: that member ignored')
  t.same(labels([ask(KEY), ask(OTHER, 'sig1')]), [`sig0:${KEY}`, `sig1:${OTHER}`], 'field lines: every held key')
  t.same(labels(`${ask(KEY)}, ${ask(KEY, 'sig1')}`), [`sig0:${KEY}`], 'a key asked for twice: signed once, under the first label')
  t.same(labels(undefined), [], 'no field')
  t.same(requestedSignatures(ask(KEY), new Map()), [], 'no keys held')
  for (const [name, value] of [
    ['malformed', `sig0=("unencoded-digest";sf;keyid="${KEY}"`],
    ['not an inner list', `sig0="unencoded-digest";keyid="${KEY}";tag="ed25519-integrity"`],
    ['another component', `sig0=("content-digest";sf);keyid="${KEY}";tag="ed25519-integrity"`],
    ['a token, not a string', `sig0=(unencoded-digest;sf);keyid="${KEY}";tag="ed25519-integrity"`],
    ['two components', `sig0=("unencoded-digest";sf "@status");keyid="${KEY}";tag="ed25519-integrity"`],
    ['no sf', `sig0=("unencoded-digest");keyid="${KEY}";tag="ed25519-integrity"`],
    ['sf and another parameter', `sig0=("unencoded-digest";sf;req);keyid="${KEY}";tag="ed25519-integrity"`],
    ['another tag', `sig0=("unencoded-digest";sf);keyid="${KEY}";tag="sri"`],
    ['alg too', `sig0=("unencoded-digest";sf);keyid="${KEY}";tag="ed25519-integrity";alg="ed25519"`],
    ['no keyid', 'sig0=("unencoded-digest";sf);tag="ed25519-integrity";created'],
    ['keyid not a string', `sig0=("unencoded-digest";sf);keyid=:${KEY}:;tag="ed25519-integrity"`]
  ]) t.same(labels(value), [], `${name as string}: ignored`)

  // One field line, or the same as a list of field lines: the same answers.
  for (const value of [
    ask(KEY), ask(KEY, 'x'), ask(STRANGER), ask(KEY.replace(/=+$/, '')), `Sig=${PARAMS(KEY)}`, `=${PARAMS(KEY)}`,
    `sig0=${PARAMS(`${KEY}\\`)}`, `sig0=${PARAMS(`${KEY}"`)}`, `${ask(KEY)}, ${ask(OTHER, 'sig1')}`,
    `a=b, sig1=${PARAMS(OTHER)}`, ` ${ask(KEY)}`, `sig0=${PARAMS('\u0001')}`
  ]) {
    t.same(requestedSignatures(value, keys), requestedSignatures([value], keys), `as parsed: ${value.slice(0, 40)}`)
  }
  t.same(sriAlgorithms(['sha-256'], ['sha-256', 'sha-512']), ['sha-256'])
  t.same(sriAlgorithms(['sha-512', 'md5'], ['md5', 'sha-512']), ['sha-512'], 'others dropped')
  t.same(sriAlgorithms([], ['md5', 'sha-512', 'sha-256']), ['sha-512'], 'none: the first sha-2 enabled')
  t.same(sriAlgorithms(['md5'], ['md5', 'sha-256']), ['sha-256'], 'only others: the first sha-2 enabled')

  const [a, b] = requestedSignatures(`${ask(KEY)}, ${ask(OTHER, 'sig1')}`, keys)
  const own = { label: 'sig0', keyid: KEY, privateKey: ed.privateKey }
  t.same(signaturesFor([], own), [own], 'unsolicited alone')
  t.same(signaturesFor([b as IntegritySignature], null), [b], 'asked alone')
  t.same(signaturesFor([b as IntegritySignature], own), [b, own], 'both, labels and keys apart')
  t.same(signaturesFor([a as IntegritySignature], own), [a], 'the same key asked for: once')
  t.same(signaturesFor([{ ...(b as IntegritySignature), label: 'sig0' }], own).length, 1, 'its label taken: the one asked for wins')

  const fields = signatureFields([own], sf('x'))
  t.equal(fields.input, `sig0=${PARAMS(KEY)}`, 'Signature-Input: the profile\'s parameters, in order, no alg, no created')
  t.ok(verifiedByHand({ 'unencoded-digest': sf('x'), 'signature-input': fields.input, signature: fields.signature }, 'sig0', ed.publicKey))
  t.equal((heldKeyOf(ed.privateKey) as { keyid: string }).keyid, KEY, 'the keyid: the base64 of the raw public key')
})

test('signatures are kept for the same signature base (Ed25519 is deterministic), at most SIGNATURE_CACHE_SIZE of them', async (t) => {
  const params = PARAMS(KEY)
  const base = (i: number, p = params): string => `"unencoded-digest";sf: ${sf(String(i))}\n"@signature-params": ${p}`
  const check = (i: number, value: string, p = params, key = ed.publicKey): boolean => verify(null, Buffer.from(base(i, p)), key, Buffer.from(value, 'base64'))
  const first = signed(sf('-1'), params, ed.privateKey)
  t.ok(check(-1, first))
  t.equal(signed(sf('-1'), params, ed.privateKey), first, 'the same base again: the same signature')
  // The same value with other parameters (the keyid unpadded) or another key: signed for them.
  const unpaddedParams = PARAMS(KEY.replace(/=+$/, ''))
  t.ok(check(-1, signed(sf('-1'), unpaddedParams, ed.privateKey), unpaddedParams), 'other parameters: their own signature')
  const otherParams = PARAMS((heldKeyOf(other.privateKey) as { keyid: string }).keyid)
  t.ok(check(-1, signed(sf('-1'), otherParams, other.privateKey), otherParams, other.publicKey), 'another key: its own signature')
  t.equal(signed(sf('-1'), params, ed.privateKey), first, 'and back')
  // Each signed twice: kept from its second signing on.
  for (let i = 0; i < SIGNATURE_CACHE_SIZE * 2; i++) signed(sf(String(i >> 1)), params, ed.privateKey)
  t.ok(check(SIGNATURE_CACHE_SIZE - 1, signed(sf(String(SIGNATURE_CACHE_SIZE - 1)), params, ed.privateKey)), 'the last one kept')
  t.equal(signed(sf('-1'), params, ed.privateKey), first, 'the first, pushed out, signed again: the same value')
})

test('a signature is kept from the second signing of its value on: a value signed once is not held', async (t) => {
  // node:crypto's sign() counted (module.syncBuiltinESMExports() makes ES modules see it); every signature is a real one.
  const target = crypto as { sign: typeof crypto.sign }
  const realSign = target.sign
  let signs = 0
  target.sign = ((...args: Parameters<typeof crypto.sign>) => {
    signs++
    return Reflect.apply(realSign, crypto, args)
  }) as typeof crypto.sign
  syncBuiltinESMExports()
  t.teardown(() => {
    target.sign = realSign
    syncBuiltinESMExports()
  })
  const params = PARAMS(KEY)
  const value = sf(`signed again ${Date.now()}`)
  const first = signed(value, params, ed.privateKey)
  t.equal(signs, 1)
  t.equal(signed(value, params, ed.privateKey), first, 'the same signature')
  t.equal(signs, 2, 'signed once, it was not kept')
  t.equal(signed(value, params, ed.privateKey), first)
  t.equal(signs, 2, 'signed twice, it is kept')
  t.equal(signed('sha-256=:', params, ed.privateKey).length, 88, 'a value shorter than a fingerprint signs too')
})

test('a route answers each Accept-Signature in turn as asked, the same words again or other ones, alone or with a Want field', async (t) => {
  const server = await app(t, { integrityKeys: [ed.privateKey, other.privateKey] })
  const asks: Array<[Record<string, string | string[]>, string | undefined, string]> = [
    [{ 'accept-signature': ask(KEY, 'sig1') }, 'sig1', 'asked'],
    [{ 'accept-signature': ask(KEY, 'sig1') }, 'sig1', 'the same words again'],
    [{ 'accept-signature': ask(OTHER, 'sig2') }, 'sig2', 'another key, another label'],
    [{}, undefined, 'nothing asked'],
    [{ 'accept-signature': ask(STRANGER) }, undefined, 'a key not held'],
    [{ 'accept-signature': ask(STRANGER) }, undefined, 'a key not held, again'],
    [{ 'accept-signature': [ask(KEY, 'sig3'), ask(OTHER, 'sig4')] }, 'sig3', 'two field lines'],
    [{ 'accept-signature': ask(KEY, 'sig1'), 'want-unencoded-digest': 'sha-512=1' }, 'sig1', 'with a Want field'],
    [{ 'accept-signature': ask(KEY, 'sig1') }, 'sig1', 'alone again']
  ]
  for (const [headers, label, name] of asks) {
    const res = await server.inject({ url: '/s.js', headers })
    if (label === undefined) {
      t.equal(res.headers.signature, undefined, `${name}: no signature`)
      continue
    }
    t.match(res.headers['signature-input'], new RegExp(`^${label}=`), `${name}: under its label`)
    const publicKey = String(res.headers['signature-input']).includes(KEY) ? ed.publicKey : other.publicKey
    t.ok(verifiedByHand(res.headers, label, publicKey), `${name}: verifies`)
    t.equal(res.headers['unencoded-digest'], headers['want-unencoded-digest'] === undefined ? sf(SCRIPT) : sf(SCRIPT, 'sha-512'), `${name}: Unencoded-Digest`)
  }
})

test('a request asking for a held key gets Unencoded-Digest, Signature-Input and Signature under its label; the signature verifies', async (t) => {
  const server = await app(t)
  const res = await server.inject({ url: '/s.js', headers: { 'accept-signature': ask(KEY, 'sig7') } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['unencoded-digest'], sf(SCRIPT), 'Unencoded-Digest: sha-256 by default')
  t.equal(res.headers['signature-input'], `sig7=${PARAMS(KEY)}`, 'the label asked for')
  t.match(res.headers['signature'], /^sig7=:[A-Za-z0-9+/]{86}==:$/, 'a 64-byte signature')
  t.ok(verifiedByHand(res.headers, 'sig7', ed.publicKey), 'verifies over a signature base built by hand')
  t.notOk(verifiedByHand(res.headers, 'sig7', other.publicKey), 'not with another key')
  t.equal(await verifiedByLibrary(res.headers, ed.publicKey), true, 'http-message-signatures verifies it')
  t.equal(await verifiedByLibrary(res.headers, other.publicKey), false, 'and not with another key')
  t.equal(res.headers.vary, 'Want-Content-Digest, Want-Repr-Digest, Want-Unencoded-Digest, Accept-Signature', 'Vary: Accept-Signature')

  const tampered = { ...res.headers, 'unencoded-digest': sf(SCRIPT + ' ') }
  t.notOk(verifiedByHand(tampered, 'sig7', ed.publicKey), 'another digest: the signature no longer verifies')

  for (const [name, headers] of [
    ['no Accept-Signature', {}],
    ['a key not held', { 'accept-signature': ask(STRANGER) }],
    ['a malformed Accept-Signature', { 'accept-signature': 'sig0=(' }]
  ] as const) {
    const plain = await server.inject({ url: '/s.js', headers })
    t.equal(plain.statusCode, 200, name)
    t.equal(plain.headers['signature'], undefined, `${name}: no signature`)
    t.equal(plain.headers['signature-input'], undefined, `${name}: no Signature-Input`)
    t.equal(plain.headers['unencoded-digest'], undefined, `${name}: no Unencoded-Digest (not configured)`)
    t.match(plain.headers.vary, /Accept-Signature/, `${name}: Vary still names Accept-Signature`)
  }
})

test('two held keys asked for: both signed; the signed Unencoded-Digest carries sha-256 and sha-512 only', async (t) => {
  const server = await buildApp(t, { algorithms: ['sha-256', 'sha-512', 'md5'], strict: true, unencodedDigest: ['md5', 'sha-512'], integrityKeys: [ed.privateKey, other.privateKey] })
  server.get('/s.js', async () => SCRIPT)
  const res = await server.inject({ url: '/s.js', headers: { 'accept-signature': `${ask(KEY)}, ${ask(OTHER, 'sig1')}`, 'want-unencoded-digest': 'md5=10, sha-256=3' } })
  t.equal(res.headers['unencoded-digest'], sf(SCRIPT), 'md5 left out of the signed field')
  t.ok(verifiedByHand(res.headers, 'sig0', ed.publicKey), 'sig0')
  t.ok(verifiedByHand(res.headers, 'sig1', other.publicKey), 'sig1')
  t.equal(await verifiedByLibrary(res.headers, ed.publicKey, other.publicKey), true, 'http-message-signatures verifies both')
  t.equal(await verifiedByLibrary(res.headers, ed.publicKey), false, 'not sig1 with the first key')
  const unsigned = await server.inject({ url: '/s.js', headers: { 'want-unencoded-digest': 'md5=10' } })
  t.equal(unsigned.headers['unencoded-digest'], sf(SCRIPT, 'md5'), 'unsigned: as asked')
  const both = await server.inject({ url: '/s.js', headers: { 'accept-signature': ask(KEY) } })
  t.equal(both.headers['unencoded-digest'], sf(SCRIPT, 'sha-512'), 'the unsolicited sha-512, md5 left out')
  t.ok(verifiedByHand(both.headers, 'sig0', ed.publicKey))
})

test('integritySignature signs without being asked: the usual response, the full path, a HEAD, under compress; Accept-Signature adds its own', async (t) => {
  const server = await buildApp(t, { integrityKeys: [ed.privateKey, other.privateKey], integritySignature: true, reprDigest: true })
  await server.register(compress, { threshold: 1, encodings: ['gzip'] } as never)
  server.get('/s.js', { compress: false }, async () => SCRIPT)
  server.get('/other.js', { digest: { integritySignature: { keyid: OTHER, label: 'k' } }, compress: false }, async () => SCRIPT)
  server.get('/z.js', async () => SCRIPT)
  server.get('/off.js', { digest: { integritySignature: false }, compress: false }, async () => SCRIPT)
  server.get('/hooked.js', { compress: false, onSend: (_q, _r, p, done) => { done(null, p) } }, async () => SCRIPT)

  for (const url of ['/s.js', '/hooked.js']) {
    const res = await server.inject({ url })
    t.equal(res.headers['unencoded-digest'], sf(SCRIPT), `${url}: Unencoded-Digest`)
    t.equal(res.headers['repr-digest'], sf(SCRIPT), `${url}: Repr-Digest, the same value`)
    t.equal(res.headers['signature-input'], `sig0=${PARAMS(KEY)}`, `${url}: sig0, the first key`)
    t.ok(verifiedByHand(res.headers, 'sig0', ed.publicKey), `${url}: verifies`)
  }
  const head = await server.inject({ method: 'HEAD', url: '/s.js' })
  t.equal(head.headers['unencoded-digest'], sf(SCRIPT), 'HEAD: the representation\'s Unencoded-Digest')
  t.ok(verifiedByHand(head.headers, 'sig0', ed.publicKey), 'HEAD: signed')
  const routed = await server.inject({ url: '/other.js' })
  t.equal(routed.headers['signature-input'], `k=${PARAMS(OTHER)}`, 'the route\'s key and label')
  t.ok(verifiedByHand(routed.headers, 'k', other.publicKey))
  const off = await server.inject({ url: '/off.js' })
  t.equal(off.headers['signature'], undefined, 'off on a route')
  const gz = await server.inject({ url: '/z.js', headers: { 'accept-encoding': 'gzip' } })
  t.equal(gz.headers['content-encoding'], 'gzip')
  t.equal(gunzipSync(gz.rawPayload).toString(), SCRIPT)
  t.equal(gz.headers['unencoded-digest'], sf(SCRIPT), 'gzip: the digest of the decoded body')
  t.ok(verifiedByHand(gz.headers, 'sig0', ed.publicKey), 'gzip: signed')

  const asked = await server.inject({ url: '/s.js', headers: { 'accept-signature': ask(OTHER, 'sig1') } })
  t.equal(asked.headers['signature-input'], `sig1=${PARAMS(OTHER)}, sig0=${PARAMS(KEY)}`, 'the one asked for, then the unsolicited one')
  t.ok(verifiedByHand(asked.headers, 'sig1', other.publicKey))
  t.ok(verifiedByHand(asked.headers, 'sig0', ed.publicKey))
  t.equal(await verifiedByLibrary(asked.headers, ed.publicKey, other.publicKey), true, 'http-message-signatures verifies both')
  const same = await server.inject({ url: '/s.js', headers: { 'accept-signature': ask(KEY, 'a') } })
  t.equal(same.headers['signature-input'], `a=${PARAMS(KEY)}`, 'the same key asked for: once, under the label asked for')
})

test('a stream is buffered to sign it (never trailers); beyond maxBufferSize or live, the signature is left out and reported', async (t) => {
  const logs: Array<{ msg: string, fields?: string[] }> = []
  const server = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => logs.push(JSON.parse(line)) } } })
  t.teardown(() => server.close())
  await server.register(digestFields, { integrityKeys: ed.privateKey, maxBufferSize: 4096 })
  const chunks = (n: number): Readable => Readable.from(Array.from({ length: n }, () => Buffer.from('x'.repeat(1000))))
  const omitted: unknown[] = []
  server.addHook('onResponse', async (_req, reply) => { omitted.push(reply.digestsOmitted) })
  server.get('/small', async (_req, reply) => reply.type('text/javascript').send(chunks(3)))
  server.get('/large', async (_req, reply) => reply.type('text/javascript').send(chunks(10)))
  server.get('/live', async (_req, reply) => reply.type('text/event-stream').send(chunks(1)))
  const headers = { 'accept-signature': ask(KEY), te: 'trailers' }
  const small = await server.inject({ url: '/small', headers })
  t.equal(small.headers['unencoded-digest'], sf('x'.repeat(3000)), 'TE: trailers, but a header')
  t.equal(small.headers['content-length'], '3000', 'buffered')
  t.equal(small.headers.trailer, undefined, 'no trailers')
  t.ok(verifiedByHand(small.headers, 'sig0', ed.publicKey))
  t.equal(omitted.shift(), null)
  const large = await server.inject({ url: '/large', headers })
  t.equal(large.body.length, 10000, 'sent whole')
  t.equal(large.headers['signature'], undefined, 'no signature')
  t.equal(large.headers['unencoded-digest'], undefined, 'no Unencoded-Digest')
  t.same(omitted.shift(), { reason: 'over-max-buffer-size', fields: ['Unencoded-Digest', 'Signature'] }, 'reported on the reply')
  await server.inject({ url: '/large', headers })
  t.same(omitted.shift(), { reason: 'over-max-buffer-size', fields: ['Unencoded-Digest', 'Signature'] })
  const live = await server.inject({ url: '/live', headers })
  t.equal(live.headers['signature'], undefined, 'a live stream: none')
  t.same(omitted.shift(), { reason: 'live-stream', fields: ['Unencoded-Digest', 'Signature'] })
  const liveHead = await server.inject({ method: 'HEAD', url: '/live', headers })
  t.equal(liveHead.headers['signature'], undefined, 'the HEAD of a live stream: none')
  t.same(omitted.shift(), { reason: 'live-stream', fields: ['Unencoded-Digest', 'Signature'] })
  const warnings = logs.filter((l) => /not sent/.test(l.msg))
  t.equal(warnings.length, 3, 'one warning per route and reason')
  t.match(warnings[2]?.msg, /not sent on HEAD \/live: .* Fix: declare the digest with reply.setReprDigest\(\)/, 'a HEAD: the fix of any HEAD')
  t.match(warnings[0]?.msg, /Unencoded-Digest, Signature not sent on GET \/large: .* Fix: raise maxBufferSize .*: a signature covers Unencoded-Digest in the header section/)
  t.match(warnings[1]?.msg, /Unencoded-Digest, Signature not sent on GET \/live: .* Fix: set digest: \{ live: false \} .*: a signature covers Unencoded-Digest in the header section/)
})

test('files of @fastify/static are signed, compressed or not, and a 206 too', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'digest-sri-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  await writeFile(join(root, 'app.js'), SCRIPT)
  const server = await buildApp(t, { integrityKeys: ed.privateKey })
  await server.register(compress, { threshold: 1, encodings: ['br'] } as never)
  await server.register(fastifyStatic, { root, setHeaders: digestFields.staticHeaders })
  for (const encoding of ['identity', 'br']) {
    const res = await server.inject({ url: '/app.js', headers: { 'accept-signature': ask(KEY), 'accept-encoding': encoding, te: 'trailers' } })
    t.equal(res.headers['content-encoding'], encoding === 'br' ? 'br' : undefined, encoding)
    t.equal(res.headers['unencoded-digest'], sf(SCRIPT), `${encoding}: the file's digest`)
    t.ok(verifiedByHand(res.headers, 'sig0', ed.publicKey), `${encoding}: signed`)
  }
  const part = await server.inject({ url: '/app.js', headers: { 'accept-signature': ask(KEY), range: 'bytes=0-9' } })
  t.equal(part.statusCode, 206)
  t.equal(part.headers['unencoded-digest'], sf(SCRIPT), '206: the whole representation\'s')
  t.ok(verifiedByHand(part.headers, 'sig0', ed.publicKey), '206: signed')
})

test('Accept-Signature on a route whose usual fields share no value with a signed Unencoded-Digest: the full path signs', async (t) => {
  const server = await buildApp(t, { algorithms: ['md5', 'sha-256'], reprDigest: 'md5', integrityKeys: ed.privateKey })
  server.get('/s.js', async () => SCRIPT)
  const res = await server.inject({ url: '/s.js', headers: { 'accept-signature': ask(KEY) } })
  t.equal(res.headers['repr-digest'], sf(SCRIPT, 'md5'))
  t.equal(res.headers['unencoded-digest'], sf(SCRIPT))
  t.ok(verifiedByHand(res.headers, 'sig0', ed.publicKey))
  const plain = await server.inject({ url: '/s.js' })
  t.equal(plain.headers['repr-digest'], sf(SCRIPT, 'md5'), 'unsigned: the usual response')
  t.equal(plain.headers['unencoded-digest'], undefined)
})

test('what the plugin does not sign: a 406, a response without content, a reply with its own Signature fields, a route with digest: false', async (t) => {
  const server = await buildApp(t, { integrityKeys: ed.privateKey, reprDigest: true })
  server.get('/s.js', async () => SCRIPT)
  server.get('/none', async (_req, reply) => reply.code(204).send())
  server.get('/own', async (_req, reply) => reply.header('signature-input', 'mine=("@status")').send(SCRIPT))
  server.get('/own-sig', async (_req, reply) => reply.header('signature', 'mine=:AAAA:').send(SCRIPT))
  server.get('/off', { digest: false }, async () => SCRIPT)
  const headers = { 'accept-signature': ask(KEY) }
  const stale = await server.inject({ url: '/s.js', headers: { ...headers, 'repr-digest': sf('other') } })
  t.equal(stale.statusCode, 406)
  t.equal(stale.headers['signature'], undefined, '406: none')
  const none = await server.inject({ url: '/none', headers })
  t.equal(none.statusCode, 204)
  t.equal(none.headers['signature'], undefined, '204: none')
  const own = await server.inject({ url: '/own', headers })
  t.equal(own.headers['signature-input'], 'mine=("@status")', 'the reply\'s own Signature-Input kept')
  t.equal(own.headers['signature'], undefined, 'nothing added')
  t.equal(own.headers['unencoded-digest'], sf(SCRIPT), 'Unencoded-Digest still sent')
  const ownSig = await server.inject({ url: '/own-sig', headers })
  t.equal(ownSig.headers['signature'], 'mine=:AAAA:', 'the reply\'s own Signature kept')
  t.equal(ownSig.headers['signature-input'], undefined)
  const off = await server.inject({ url: '/off', headers })
  t.equal(off.headers['signature'], undefined, 'digest: false: none')
  t.equal(off.headers.vary, undefined)
  const missing = await server.inject({ url: '/missing.js', headers })
  t.equal(missing.statusCode, 404)
  t.ok(verifiedByHand(missing.headers, 'sig0', ed.publicKey), 'a 404 asked for: signed, as any response with content')
  t.equal(createHash('sha256').update(missing.rawPayload).digest('base64'), (missing.headers['unencoded-digest'] as string).slice(9, -1))
})

test('a hook\'s Signature and Signature-Input join the SRI ones in one Dictionary each; a label used twice fails the hook', async (t) => {
  const signer = generateKeyPairSync('ed25519')
  let label = 'sig1'
  let input = ''
  const server = await buildApp(t, {
    integrityKeys: ed.privateKey,
    contentDigest: true,
    async onDigestFields (_request, reply, fields) {
      if (reply.statusCode >= 500) return undefined
      // An RFC 9421 response signature over Content-Digest, by http-message-signatures.
      const signed = await httpbis.signMessage({ key: createSigner(signer.privateKey, 'ed25519', keyid(signer.publicKey)), name: label, fields: ['content-digest'] },
        { status: reply.statusCode, headers: { 'content-digest': fields['content-digest'] as string } as Record<string, string> })
      return { 'signature-input': input === '' ? signed.headers['Signature-Input'] as string : input, signature: signed.headers['Signature'] as string }
    }
  })
  server.get('/s.js', async (_req, reply) => reply.type('text/javascript').send(SCRIPT))
  const headers = { 'accept-signature': ask(KEY) }
  const res = await server.inject({ url: '/s.js', headers })
  t.equal(res.statusCode, 200)
  t.same([...parseDictionary(res.headers['signature'] as string).keys()], ['sig0', 'sig1'], 'one Signature, both labels')
  t.same([...parseDictionary(res.headers['signature-input'] as string).keys()], ['sig0', 'sig1'], 'one Signature-Input, both labels')
  t.ok(verifiedByHand(res.headers, 'sig0', ed.publicKey), 'the SRI signature still verifies')
  t.equal(await verifiedByLibrary(res.headers, ed.publicKey, signer.publicKey), true, 'http-message-signatures verifies both')

  label = 'sig0'
  const clash = await server.inject({ url: '/s.js', headers })
  t.equal(clash.statusCode, 500)
  t.match(clash.json(), { code: 'FST_DIGEST_FIELD_HOOK_FAILED', message: /the signature-input label sig0 is taken by the response's own signature/ })
  t.not(clash.body, SCRIPT)
  t.same([...parseDictionary(clash.headers['signature'] as string).keys()], ['sig0'], 'the 500 carries its own SRI signature only')
  t.ok(verifiedByHand(clash.headers, 'sig0', ed.publicKey), 'over its own Unencoded-Digest')
  t.equal(createHash('sha256').update(clash.rawPayload).digest('base64'), (clash.headers['unencoded-digest'] as string).slice(9, -1))

  label = 'sig1'
  input = 'sig1=('
  const malformed = await server.inject({ url: '/s.js', headers })
  t.equal(malformed.statusCode, 500)
  t.match(malformed.json(), { code: 'FST_DIGEST_FIELD_HOOK_FAILED', message: /signature-input is not a Structured Field Dictionary/ })

  // No SRI signature on the response: the hook's fields go out as returned.
  input = ''
  const alone = await server.inject('/s.js')
  t.same([...parseDictionary(alone.headers['signature'] as string).keys()], ['sig1'])
  t.equal(await verifiedByLibrary(alone.headers, signer.publicKey), true)
})
