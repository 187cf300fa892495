// The signature recipes (RFC 9421), run as programs: examples/signed-inbox.mjs
// checks signatures with http-message-signatures from the header fields and
// leaves the body to the plugin; examples/signing-interceptor.mjs signs
// undici requests after digestInterceptor() added their Content-Digest;
// examples/signed-client.mjs uses both against the inbox. The keys are
// generated here with node:crypto and handed to the programs in a file
// (SIGNATURE_KEYS). Requests are real: undici, or node:http for trailers.
import { test } from 'tap'
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { createSigner, createVerifier, httpbis, type SignConfig, type SigningKey } from 'http-message-signatures'
import { Agent, request, type Dispatcher } from 'undici'
import { digestInterceptor } from '../../../lib/client/index'
import { examplesDir, runClient, spawnExample, startExample } from '../../package/example-helpers'
import { sf } from '../../helpers'
import { h1Upload, type TapTest } from './upload-helpers'

const ALICE = 'https://sender.example/users/alice#main-key'
const BOB = 'https://sender.example/users/bob#ed25519-key'
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const ed = generateKeyPairSync('ed25519')
const stranger = generateKeyPairSync('ed25519')
const alice = createSigner(rsa.privateKey, 'rsa-v1_5-sha256', ALICE)
const bob = createSigner(ed.privateKey, 'ed25519', BOB)

const ACCEPT_SIGNATURE = 'sig=("@method" "@target-uri" "content-digest");created'
const COVERED = ['@method', '@target-uri', 'content-digest']
const MiB = 1024 * 1024

/** A folder of the test's own (removed at teardown). */
function ownDir (t: TapTest): string {
  const dir = mkdtempSync(join(tmpdir(), 'digest-signatures-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** The keys file the examples read (SIGNATURE_KEYS): alice's RSA key and bob's Ed25519 key. */
function keysFile (t: TapTest): string {
  const pem = (pair: { publicKey: KeyObject, privateKey: KeyObject }): { publicKey: string, privateKey: string } => ({
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  })
  const file = join(ownDir(t), 'keys.json')
  writeFileSync(file, JSON.stringify({
    [ALICE]: { alg: 'rsa-v1_5-sha256', ...pem(rsa) },
    [BOB]: { alg: 'ed25519', ...pem(ed) }
  }))
  return file
}

interface Answer { status: number, headers: IncomingHttpHeaders, json: Record<string, unknown> }

async function answer (res: Dispatcher.ResponseData): Promise<Answer> {
  const text = await res.body.text()
  return { status: res.statusCode, headers: res.headers, json: JSON.parse(text) }
}

/** A POST as given, through undici's global dispatcher. */
async function post (url: string, headers: Record<string, string>, body: Buffer | Readable): Promise<Answer> {
  return answer(await request(url, { method: 'POST', headers, body }))
}

interface SignOptions {
  key?: SigningKey
  fields?: string[]
  paramValues?: SignConfig['paramValues']
}

/** `headers` with Signature and Signature-Input added (http-message-signatures), as a POST to `url`. */
async function sign (url: string, headers: Record<string, string>, { key = alice, fields = COVERED, paramValues }: SignOptions = {}): Promise<Record<string, string>> {
  const signed = await httpbis.signMessage({ key, fields, ...(paramValues === undefined ? {} : { paramValues }) }, { method: 'POST', url, headers })
  return signed.headers as Record<string, string>
}

/** The recipe's refusal: 401 with Accept-Signature, and why. */
function assertRefused (t: TapTest, reply: Answer, message: string | RegExp): void {
  t.equal(reply.status, 401, `401: ${String(message)}`)
  t.equal(reply.headers['accept-signature'], ACCEPT_SIGNATURE)
  t.match(reply.json, { statusCode: 401, error: 'Unauthorized', message })
}

/** The plugin's refusal: 400 problem details. */
function assertProblem (t: TapTest, reply: Answer, code: string): void {
  t.equal(reply.status, 400, code)
  t.match(reply.headers['content-type'], 'application/problem+json')
  t.match(reply.json, { status: 400, code })
}

const activity = Buffer.from(JSON.stringify({
  '@context': 'https://www.w3.org/ns/activitystreams',
  type: 'Create',
  object: { type: 'Note', content: 'Hello' }
}))
const ACTIVITY = 'application/activity+json'

/** The same bytes, one changed. */
function tamper (bytes: Buffer): Buffer {
  const out = Buffer.from(bytes)
  const at = out.length >> 1
  out[at] = (out[at] as number) ^ 0x20
  return out
}

/** The bytes as a stream: sent chunked, without Content-Length. */
function chunked (bytes: Buffer): Readable {
  return Readable.from([bytes])
}

test('signed-inbox.mjs: signed POSTs accepted, and every refusal', async (t) => {
  const port = await startExample(t, 'signed-inbox.mjs', { SIGNATURE_KEYS: keysFile(t) })
  const inbox = `http://127.0.0.1:${port}/inbox`
  const media = `http://127.0.0.1:${port}/media`
  const digested = { 'content-type': ACTIVITY, 'content-digest': sf(activity) }

  t.test('rsa-v1_5-sha256 (as Mastodon signs) and ed25519; Content-Digest bare or ;sf', async (t) => {
    t.match(await post(inbox, await sign(inbox, digested), activity), { status: 202, json: { accepted: 'Create', signer: ALICE } })
    t.match(await post(inbox, await sign(inbox, digested, { key: bob }), activity), { status: 202, json: { signer: BOB } })
    const sfSigned = await sign(inbox, digested, { key: bob, fields: ['@method', '@target-uri', 'content-digest;sf'] })
    t.match(sfSigned['Signature-Input'], '"content-digest";sf')
    t.match(await post(inbox, sfSigned, activity), { status: 202, json: { signer: BOB } })
    const bytes = Buffer.alloc(MiB, 'media ')
    const upload = await sign(media, { 'content-type': 'application/octet-stream', 'content-digest': sf(bytes) }, { key: bob })
    t.match(await post(media, upload, bytes), { status: 200, json: { size: MiB, signer: BOB } }, 'a stream read by the handler')
  })

  t.test('a tampered body: the plugin\'s 400, before the handler runs', async (t) => {
    const headers = await sign(inbox, digested)
    assertProblem(t, await post(inbox, headers, tamper(activity)), 'FST_DIGEST_MISMATCH')
    assertProblem(t, await post(inbox, headers, chunked(tamper(activity))), 'FST_DIGEST_MISMATCH')
    const bytes = Buffer.alloc(MiB, 'media ')
    const upload = await sign(media, { 'content-type': 'application/octet-stream', 'content-digest': sf(bytes) })
    assertProblem(t, await post(media, upload, tamper(bytes)), 'FST_DIGEST_MISMATCH')
  })

  t.test('a signature that does not cover Content-Digest, or one member of it: 401', async (t) => {
    const uncovered = await sign(inbox, digested, { fields: ['@method', '@target-uri'] })
    assertRefused(t, await post(inbox, uncovered, activity), 'the signature does not cover content-digest')
    const member = await sign(inbox, digested, { fields: ['@method', '@target-uri', 'content-digest;key="sha-256"'] })
    t.match(member['Signature-Input'], '"content-digest";key="sha-256"')
    assertRefused(t, await post(inbox, member, activity), 'the signature covers content-digest with ;key')
    const noTarget = await sign(inbox, digested, { fields: ['@method', 'content-digest'] })
    assertRefused(t, await post(inbox, noTarget, activity), 'the signature does not cover @target-uri')
  })

  t.test('no Content-Digest: refused', async (t) => {
    const headers = await sign(inbox, { 'content-type': ACTIVITY }, { fields: ['@method', '@target-uri'] })
    // With a Content-Length the plugin's onRequest hook, the route's first,
    // refuses it at once.
    const missing = await post(inbox, headers, activity)
    assertProblem(t, missing, 'FST_DIGEST_MISSING')
    t.ok(missing.headers['want-content-digest'])
    // Without one (chunked), the signature check does, before reading.
    assertRefused(t, await post(inbox, headers, chunked(activity)), 'the signature does not cover content-digest')
    // Signed with one that is then dropped.
    const dropped = await sign(inbox, digested)
    delete dropped['content-digest']
    assertRefused(t, await post(inbox, dropped, chunked(activity)), /content-digest/)
  })

  t.test('unsigned, or signed wrongly: 401', async (t) => {
    assertRefused(t, await post(inbox, digested, activity), 'the request is not signed')
    assertRefused(t, await post(inbox, { ...digested, 'signature-input': '(((', signature: 'sig=:AA==:' }, activity), 'Signature-Input is not a Dictionary')
    assertRefused(t, await post(inbox, { ...digested, 'signature-input': 'sig=1', signature: 'sig=:AA==:' }, activity), 'Signature-Input is not an Inner List')
    const other = createSigner(stranger.privateKey, 'ed25519', 'https://elsewhere.example/users/eve#key')
    assertRefused(t, await post(inbox, await sign(inbox, digested, { key: other }), activity), 'the signature does not verify')
    const impostor = createSigner(stranger.privateKey, 'ed25519', BOB)
    assertRefused(t, await post(inbox, await sign(inbox, digested, { key: impostor }), activity), 'the signature does not verify')
    const wrongAlg = createSigner(stranger.privateKey, 'ed25519', ALICE)
    assertRefused(t, await post(inbox, await sign(inbox, digested, { key: wrongAlg }), activity), 'Unsupported key algorithm')
    assertRefused(t, await post(inbox, await sign(media, digested), activity), 'the signature does not verify')
    const old = new Date(Date.now() - 3600_000)
    assertRefused(t, await post(inbox, await sign(inbox, digested, { paramValues: { created: old } }), activity), 'Signature is too old')
    assertRefused(t, await post(inbox, await sign(inbox, digested, { paramValues: { created: null } }), activity), 'the signature has no created or keyid')
    const textCreated = { ...digested, 'signature-input': `sig=("@method" "@target-uri" "content-digest");created="1";keyid="${ALICE}"`, signature: 'sig=:AA==:' }
    assertRefused(t, await post(inbox, textCreated, activity), 'the signature has no created or keyid')
    const twice = await sign(inbox, await sign(inbox, digested), { key: bob })
    t.match(twice['Signature-Input'], /^sig=.*, sig0=/)
    assertRefused(t, await post(inbox, twice, activity), 'one signature is expected')
  })

  t.test('the signed Content-Digest must be the one verified, not an unsigned trailer', async (t) => {
    // Signed: a digest of an algorithm the route does not use (md5, a
    // deprecated key); unsigned: a trailer with the sha-256 of other bytes.
    // The plugin verified a Content-Digest (the trailer's), so
    // request.digestVerification.verified is true; the signed one was not.
    const other = tamper(activity)
    const md5 = `md5=:${createHash('md5').update(activity).digest('base64')}:`
    const headers = await sign(inbox, { 'content-type': ACTIVITY, 'content-digest': md5 })
    const reply = await h1Upload(port, { path: '/inbox', headers: { ...headers, trailer: 'content-digest' }, body: [other], trailers: { 'content-digest': sf(other) } })
    assertRefused(t, { status: reply.status, headers: reply.headers, json: JSON.parse(reply.body.toString()) }, 'the signed Content-Digest was not verified')
    // Without the trailer, the plugin refuses the unusable digest itself.
    const alone = await h1Upload(port, { path: '/inbox', headers, body: [activity] })
    assertProblem(t, { status: alone.status, headers: alone.headers, json: JSON.parse(alone.body.toString()) }, 'FST_DIGEST_UNSUPPORTED_ALGORITHM')
  })
})

/** The resident set size of a process now and at its peak, in bytes (Linux: VmRSS and VmHWM of /proc/<pid>/status), or null. */
function rss (pid: number): { now: number, peak: number } | null {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return null
  }
  const kB = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]) * 1024
  return { now: kB('VmRSS'), peak: kB('VmHWM') }
}

test('signed-inbox.mjs: a 128 MiB signed upload, streamed; the peak RSS grows by less than the body', async (t) => {
  const { child, port } = await spawnExample(t, 'signed-inbox.mjs', { SIGNATURE_KEYS: keysFile(t) })
  const pid = child.pid as number
  const { signingInterceptor } = await loadSigningInterceptor()
  const dispatcher = new Agent().compose(signingInterceptor(bob), digestInterceptor())
  t.teardown(() => dispatcher.close())
  // A body of `count` MiB, streamed: the digest interceptor sends a stream
  // as it is, with the Content-Digest given (worked out here), which is signed.
  const chunk = Buffer.alloc(MiB, 'a large file ')
  const upload = async (count: number): Promise<Answer> => {
    const hash = createHash('sha256')
    for (let i = 0; i < count; i++) hash.update(chunk)
    const body = Readable.from((function * () { for (let i = 0; i < count; i++) yield chunk })())
    const headers = { 'content-type': 'application/octet-stream', 'content-digest': `sha-256=:${hash.digest('base64')}:` }
    return answer(await request(`http://127.0.0.1:${port}/media`, { dispatcher, method: 'POST', headers, body }))
  }
  // The code paths warmed up first.
  t.match(await upload(4), { status: 200, json: { size: 4 * MiB } })
  const before = rss(pid)
  const count = 128
  t.match(await upload(count), { status: 200, json: { size: count * MiB, signer: BOB } })
  const after = rss(pid)
  if (before === null || after === null) {
    t.comment('no /proc/<pid>/status here: the peak RSS is not measured')
    return
  }
  // Over the RSS before, not the peak before, which may be higher (startup):
  // a body held whole would raise the peak by its size at least. Streamed,
  // the growth is the garbage V8 lets pile up before it collects, whatever
  // the size (docs/benchmarks.md).
  const growth = after.peak - before.now
  t.comment(`RSS ${(before.now / MiB).toFixed(1)} MiB before, peak ${(after.peak / MiB).toFixed(1)} MiB after a ${count} MiB upload`)
  t.ok(growth < count * MiB, `the peak RSS grew by ${(growth / MiB).toFixed(1)} MiB, less than the body`)
})

/** examples/signing-interceptor.mjs, an ES module. */
async function loadSigningInterceptor (): Promise<{ signingInterceptor: (key: SigningKey) => Dispatcher.DispatcherComposeInterceptor }> {
  return await import(pathToFileURL(join(examplesDir, 'signing-interceptor.mjs')).href)
}

interface Captured { method: string, url: string, headers: IncomingHttpHeaders, body: Buffer }

/** A plain node:http server that keeps each request and answers 204. */
async function captureServer (t: TapTest): Promise<{ origin: string, requests: Captured[] }> {
  const requests: Captured[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      requests.push({ method: req.method as string, url: req.url as string, headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}

/** The components a request's one signature covers, as Signature-Input lists them. */
function covered (headers: IncomingHttpHeaders): string {
  return /^sig=(\([^)]*\))/.exec(headers['signature-input'] as string)?.[1] as string
}

/** http-message-signatures' verdict on a captured request signed by alice, requiring `fields`. */
async function verifyCaptured (origin: string, captured: Captured, requiredFields: string[]): Promise<boolean | null> {
  const key = { id: ALICE, algs: ['rsa-v1_5-sha256'], verify: createVerifier(rsa.publicKey, 'rsa-v1_5-sha256') }
  return await httpbis.verifyMessage({ keyLookup: async ({ keyid }) => keyid === ALICE ? key : null, requiredFields }, {
    method: captured.method,
    url: `${origin}${captured.url}`,
    headers: captured.headers as Record<string, string>
  })
}

test('signing-interceptor.mjs after digestInterceptor(): the signature covers the Content-Digest of the bytes sent', async (t) => {
  const { signingInterceptor } = await loadSigningInterceptor()
  const { origin, requests } = await captureServer(t)
  const dispatcher = new Agent().compose(signingInterceptor(alice), digestInterceptor())
  t.teardown(() => dispatcher.close())
  const text = 'a note'
  const blob = new Blob([Buffer.alloc(256 * 1024, 'a file ')], { type: 'application/octet-stream' })
  for (const body of [text, Buffer.from(text), blob]) {
    // undici's types list no Blob body; undici sends one, and the digest interceptor hashes it.
    const res = await request(`${origin}/inbox?page=1`, { dispatcher, method: 'POST', headers: [['content-type', 'text/plain']], body: body as never })
    t.equal(res.statusCode, 204)
    await res.body.dump()
  }
  const get = await request(`${origin}/outbox`, { dispatcher })
  await get.body.dump()

  t.equal(requests.length, 4)
  for (const captured of requests.slice(0, 3)) {
    t.equal(captured.headers['content-digest'], sf(captured.body), 'the digest of the bytes received')
    t.equal(covered(captured.headers), '("@method" "@target-uri" "content-digest")')
    t.match(captured.headers['signature-input'], `keyid="${ALICE}";alg="rsa-v1_5-sha256";created=`)
    t.equal(await verifyCaptured(origin, captured, COVERED), true, 'verified by http-message-signatures')
  }
  t.equal(requests[2]?.body.length, 256 * 1024, 'the Blob, hashed before it was signed')
  const bodiless = requests[3] as Captured
  t.equal(bodiless.headers['content-digest'], undefined)
  t.equal(covered(bodiless.headers), '("@method" "@target-uri")', 'no content, no Content-Digest to sign')
  t.equal(await verifyCaptured(origin, bodiless, ['@method', '@target-uri']), true)

  // Changed on the way: the signature no longer verifies.
  const changed = { ...requests[0] as Captured, headers: { ...requests[0]?.headers, 'content-digest': sf('other') } }
  t.equal(await verifyCaptured(origin, changed, COVERED), false)
})

test('signing-interceptor.mjs before digestInterceptor() (the wrong order): signed without Content-Digest', async (t) => {
  const { signingInterceptor } = await loadSigningInterceptor()
  const { origin, requests } = await captureServer(t)
  const wrong = new Agent().compose(digestInterceptor(), signingInterceptor(alice))
  t.teardown(() => wrong.close())
  const res = await request(`${origin}/inbox`, { dispatcher: wrong, method: 'POST', body: 'a note' })
  await res.body.dump()
  const captured = requests[0] as Captured
  t.equal(captured.headers['content-digest'], sf('a note'), 'the digest was added, after signing')
  t.equal(covered(captured.headers), '("@method" "@target-uri")', 'the signature does not cover it')
  await t.rejects(verifyCaptured(origin, captured, COVERED), /Missing required signed fields/)

  // A signer that fails fails the request.
  const failing: SigningKey = { id: ALICE, alg: 'rsa-v1_5-sha256', sign: async () => { throw new Error('no signing today') } }
  const broken = new Agent().compose(signingInterceptor(failing), digestInterceptor())
  t.teardown(() => broken.close())
  await t.rejects(request(`${origin}/inbox`, { dispatcher: broken, method: 'POST', body: 'a note' }), { message: 'no signing today' })
  t.equal(requests.length, 1, 'nothing sent')
})

test('signed-client.mjs against signed-inbox.mjs: both keys accepted, the wrong order refused', async (t) => {
  const keys = keysFile(t)
  const port = await startExample(t, 'signed-inbox.mjs', { SIGNATURE_KEYS: keys })
  const file = join(examplesDir, 'public', 'hello.json')
  const out = await runClient('signed-client.mjs', [`http://127.0.0.1:${port}`, file], { SIGNATURE_KEYS: keys })
  const lines = out.trim().split('\n')
  t.equal(lines.length, 5, out)
  const size = readFileSync(file).length
  t.match(lines[0], `rsa-v1_5-sha256 inbox 202 {"accepted":"Create","signer":"${ALICE}"}`)
  t.match(lines[1], `rsa-v1_5-sha256 media 200 {"size":${size},"signer":"${ALICE}"}`)
  t.match(lines[2], `ed25519 inbox 202 {"accepted":"Create","signer":"${BOB}"}`)
  t.match(lines[3], `ed25519 media 200 {"size":${size},"signer":"${BOB}"}`)
  t.match(lines[4], /^wrong order 401 /)
  t.match(JSON.parse((lines[4] as string).slice('wrong order 401 '.length)), { message: 'the signature does not cover content-digest' })
})

test('the demo keys: signed-inbox.mjs writes them at startup, signed-client.mjs signs with them', async (t) => {
  const dir = ownDir(t)
  const env = { TMPDIR: dir, TMP: dir, TEMP: dir }
  const port = await startExample(t, 'signed-inbox.mjs', env)
  const demo = join(dir, 'fastify-digest-fields-demo-keys.json')
  t.ok(existsSync(demo))
  t.equal(statSync(demo).mode & 0o777, 0o600, 'readable by its owner only')
  const out = await runClient('signed-client.mjs', [`http://127.0.0.1:${port}`], env)
  t.match(out, /^rsa-v1_5-sha256 inbox 202 .*\nrsa-v1_5-sha256 media 200 .*\ned25519 inbox 202 .*\ned25519 media 200 .*\nwrong order 401 /)
})
