// A real browser checks the plugin's SRI signatures: headless Chromium loads
// a page whose scripts say `integrity="ed25519-KEY" crossorigin="anonymous"`,
// so that it asks for them with Accept-Signature; the scripts come through
// the plugin (strings, streams, @fastify/static files, a route that signs
// unsolicited) with @fastify/compress forced to each coding Chromium accepts,
// and without compression. Chromium runs a script only when its signature
// verifies with the key the page names and its body matches the signed
// Unencoded-Digest: every one must run. Controls, which Chromium must block,
// so the test cannot pass because the browser does not check: the same
// scripts named with a key the server does not hold, and, through a small
// proxy, a body with one byte changed and a signature with one byte changed.
import { test } from 'tap'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { AddressInfo } from 'node:net'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import digestFields = require('../../lib/index')
import { buildApp, CODINGS } from '../helpers'
import { chromiumOrSkip, pageResult, spoilingProxy, type Closeable } from './browser-helpers'

const { chromium, skip } = chromiumOrSkip()

const held = generateKeyPairSync('ed25519')
const stranger = generateKeyPairSync('ed25519')

/** What a page's integrity attribute names: the base64 of the raw 32-byte public key. */
function keyid (publicKey: KeyObject): string {
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')
}
const KEY = keyid(held.publicKey)
const STRANGER = keyid(stranger.publicKey)

/** A script that says it ran; padded so that compress codes it. */
function script (name: string): string {
  return `(window.ran = window.ran || []).push(${JSON.stringify(name)})\n/* ${'padding '.repeat(200)} */\n`
}

const SCRIPTS: Record<string, string> = {
  string: '/js/string.js',
  stream: '/js/stream.js',
  static: '/files/app.js',
  unsolicited: '/js/unsolicited.js'
}
// Spoiled by the proxy (a byte of the body, a byte of the signature): blocked.
const SPOILED: Record<string, string> = {
  'tampered-body': '/js/tampered-body.js',
  'tampered-signature': '/js/tampered-signature.js'
}

function page (): string {
  const tag = (src: string, key: string): string => `<script src="${src}" integrity="ed25519-${key}" crossorigin="anonymous"></script>`
  return `<!doctype html><html><body>
${Object.values(SCRIPTS).map((src) => tag(src, KEY)).join('\n')}
${Object.values(SPOILED).map((src) => tag(src, KEY)).join('\n')}
${Object.values(SCRIPTS).map((src) => tag(`${src}?stranger`, STRANGER)).join('\n')}
<script>
  const result = document.createElement('pre')
  result.id = 'result'
  result.textContent = JSON.stringify({ ran: window.ran || [] })
  document.body.append(result)
</script>
</body></html>`
}

async function app (t: Closeable, coding: string): Promise<FastifyInstance> {
  const root = await mkdtemp(join(tmpdir(), 'digest-browser-sri-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  await writeFile(join(root, 'app.js'), script('static'))
  const server = await buildApp(t, { integrityKeys: [held.privateKey] })
  if (coding !== 'identity') await server.register(compress, { threshold: 1, encodings: [coding] } as never)
  await server.register(fastifyStatic, { root, prefix: '/files/', setHeaders: digestFields.staticHeaders })
  server.get('/', async (_req, reply) => reply.type('text/html').send(page()))
  server.get('/js/string.js', async (_req, reply) => reply.type('text/javascript').send(script('string')))
  server.get('/js/stream.js', async (_req, reply) => {
    const body = script('stream')
    return reply.type('text/javascript').send(Readable.from([body.slice(0, 100), body.slice(100)]))
  })
  // Signed whether asked or not: for the page naming another key, too.
  server.get('/js/unsolicited.js', { digest: { integritySignature: true } }, async (_req, reply) => reply.type('text/javascript').send(script('unsolicited')))
  // The body is rewritten by the proxy: not compressed, so that it can be.
  server.get('/js/tampered-body.js', { compress: false }, async (_req, reply) => reply.type('text/javascript').send(script('tampered-body')))
  server.get('/js/tampered-signature.js', async (_req, reply) => reply.type('text/javascript').send(script('tampered-signature')))
  await server.listen({ port: 0, host: '127.0.0.1' })
  return server
}

/** Signature's value with one bit of the signature's first byte changed. */
function spoilSignature (value: string): string {
  const match = /^([a-z0-9*_.-]+)=:([^:]*):$/.exec(value)
  if (match === null) throw new Error(`unexpected Signature ${value}`)
  const bytes = Buffer.from(match[2] as string, 'base64')
  bytes[0] = (bytes[0] as number) ^ 1
  return `${match[1] as string}=:${bytes.toString('base64')}:`
}

/**
 * A proxy in front of `target` that passes everything through, records each
 * response's fields and the request's Accept-Signature, and spoils the
 * controls: a byte of tampered-body.js changes (its digest and signature
 * are the plugin's, of the original); tampered-signature.js's Signature
 * has one bit changed.
 */
function proxy (t: Closeable, target: number, seen: Map<string, { request: IncomingHttpHeaders, response: IncomingHttpHeaders }>): Promise<number> {
  return spoilingProxy(t, target, (url, request, response, headers) => {
    seen.set(url, { request, response })
    if (url === SPOILED['tampered-signature'] && typeof headers.signature === 'string') {
      headers.signature = spoilSignature(headers.signature)
    }
    return url === SPOILED['tampered-body']
  })
}

for (const coding of ['identity', ...CODINGS]) {
  test(`Chromium runs every script signed with the key its page names, ${coding}; it blocks another key's, an altered body, an altered signature`, { skip }, async (t) => {
    const server = await app(t, coding)
    const seen = new Map<string, { request: IncomingHttpHeaders, response: IncomingHttpHeaders }>()
    const port = await proxy(t, (server.server.address() as AddressInfo).port, seen)
    const result = await pageResult<{ ran: string[] }>(t, chromium as string, `http://127.0.0.1:${port}/`)
    if (result === null) return
    t.same([...result.ran].sort(), Object.keys(SCRIPTS).sort(), 'every signed script ran; no script of another key, no spoiled one')
    // What Chromium asked for and got.
    for (const [name, url] of Object.entries({ ...SCRIPTS, ...SPOILED })) {
      const exchange = seen.get(url)
      t.equal(exchange?.request['accept-signature'], `sig0=("unencoded-digest";sf);keyid="${KEY}";tag="ed25519-integrity"`, `${name}: Accept-Signature as measured`)
      t.match(exchange?.response['signature-input'], `sig0=("unencoded-digest";sf);keyid="${KEY}";tag="ed25519-integrity"`, `${name}: signed`)
      t.match(exchange?.response['unencoded-digest'], /^sha-256=:/, `${name}: Unencoded-Digest`)
      const expected = name === 'tampered-body' || coding === 'identity' ? undefined : coding
      t.equal(exchange?.response['content-encoding'], expected, `${name}: content coding`)
    }
    for (const [name, url] of Object.entries(SCRIPTS)) {
      const exchange = seen.get(`${url}?stranger`)
      t.match(exchange?.request['accept-signature'], `keyid="${STRANGER}"`, `${name}, another key: asked for it`)
      if (name === 'unsolicited') t.match(exchange?.response['signature-input'], `keyid="${KEY}"`, `${name}, another key: signed with the held key`)
      else t.equal(exchange?.response['signature'], undefined, `${name}, another key: not signed`)
    }
  })
}
