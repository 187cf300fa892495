// A real browser checks Unencoded-Digest: headless Chromium loads a page whose
// scripts and stylesheets come through the plugin (strings, Buffers, streams,
// @fastify/static files, pre-compressed files), in both modes, with
// @fastify/compress forced to each coding Chromium accepts (gzip, deflate, br,
// and zstd where node:zlib has it) and without compression. Chromium blocks a
// script or stylesheet whose Unencoded-Digest does not match its decoded
// content: every one must run or apply. The page is loaded through a small
// proxy that spoils three controls on the way (one body rewritten, two fields
// made wrong), which must be blocked, so the test cannot pass because the
// browser does not check.
import { test } from 'tap'
import type { IncomingHttpHeaders } from 'node:http'
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import type { AddressInfo } from 'node:net'
import compress from '@fastify/compress'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../../types/index'
import digestFields = require('../../lib/index')
import { buildApp, sf, CODINGS } from '../helpers'
import { chromiumOrSkip, pageResult, spoilingProxy, type Closeable } from './browser-helpers'

const { chromium, skip } = chromiumOrSkip()

/** A script that says it ran; padded so that compress codes it. */
function script (name: string): string {
  return `(window.ran = window.ran || []).push(${JSON.stringify(name)})\n/* ${'padding '.repeat(200)} */\n`
}

/** A stylesheet that gives its probe element a width of its own. */
function style (name: string, width: number): string {
  return `#css-${name} { width: ${width}px }\n/* ${'padding '.repeat(200)} */\n`
}

// What the page loads, by kind of payload. Widths tell the stylesheets apart.
const SCRIPTS = ['string', 'buffer', 'stream', 'static', 'precompressed']
const STYLES: Record<string, number> = { string: 11, buffer: 12, stream: 13, static: 14, precompressed: 15 }
// Controls: spoiled by the proxy, so Chromium must block them.
const BLOCKED_SCRIPTS = ['tampered-body', 'tampered-digest']
const BLOCKED_STYLES: Record<string, number> = { tampered: 19 }

const SCRIPT_URLS: Record<string, string> = {
  string: '/js/string.js',
  buffer: '/js/buffer.js',
  stream: '/js/stream.js',
  static: '/files/app.js',
  precompressed: '/pre/app.js',
  'tampered-body': '/js/tampered-body.js',
  'tampered-digest': '/js/tampered-digest.js'
}
const STYLE_URLS: Record<string, string> = {
  string: '/css/string.css',
  buffer: '/css/buffer.css',
  stream: '/css/stream.css',
  static: '/files/style.css',
  precompressed: '/pre/style.css',
  tampered: '/css/tampered.css'
}

function page (): string {
  const styles = Object.keys({ ...STYLES, ...BLOCKED_STYLES })
  // Probes are 1px wide unless a stylesheet says otherwise (an id selector wins over this one).
  return `<!doctype html><html><head>
<style>div[id^="css-"] { width: 1px }</style>
${styles.map((name) => `<link rel="stylesheet" href="${STYLE_URLS[name] as string}">`).join('\n')}
</head><body>
${styles.map((name) => `<div id="css-${name}"></div>`).join('\n')}
${[...SCRIPTS, ...BLOCKED_SCRIPTS].map((name) => `<script src="${SCRIPT_URLS[name] as string}"></script>`).join('\n')}
<script>
  const widths = {}
  for (const el of document.querySelectorAll('div[id^="css-"]')) widths[el.id.slice(4)] = getComputedStyle(el).width
  const result = document.createElement('pre')
  result.id = 'result'
  result.textContent = JSON.stringify({ ran: window.ran || [], widths })
  document.body.append(result)
</script>
</body></html>`
}

/** The files @fastify/static serves: plain ones, and pre-compressed ones beside their originals. */
async function files (t: Closeable): Promise<{ plain: string, pre: string }> {
  const root = await mkdtemp(join(tmpdir(), 'digest-browser-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  const plain = join(root, 'plain')
  const pre = join(root, 'pre')
  await mkdir(plain)
  await mkdir(pre)
  await writeFile(join(plain, 'app.js'), script('static'))
  await writeFile(join(plain, 'style.css'), style('static', STYLES.static as number))
  const preScript = script('precompressed')
  const preStyle = style('precompressed', STYLES.precompressed as number)
  await writeFile(join(pre, 'app.js'), preScript)
  await writeFile(join(pre, 'app.js.br'), brotliCompressSync(preScript))
  await writeFile(join(pre, 'style.css'), preStyle)
  await writeFile(join(pre, 'style.css.gz'), gzipSync(preStyle))
  return { plain, pre }
}

async function app (t: Closeable, opts: FastifyDigestFieldsOptions, coding: string): Promise<FastifyInstance> {
  const dirs = await files(t)
  const server = await buildApp(t, opts)
  if (coding !== 'identity') await server.register(compress, { threshold: 1, encodings: [coding] } as never)
  await server.register(fastifyStatic, { root: dirs.plain, prefix: '/files/', setHeaders: digestFields.staticHeaders })
  await server.register(fastifyStatic, { root: dirs.pre, prefix: '/pre/', preCompressed: true, decorateReply: false, setHeaders: digestFields.staticHeaders })
  server.get('/', async (_req, reply) => reply.type('text/html').send(page()))
  const send = (body: string, kind: string): unknown =>
    kind === 'buffer' ? Buffer.from(body) : kind === 'stream' ? Readable.from([body.slice(0, 100), body.slice(100)]) : body
  for (const kind of ['string', 'buffer', 'stream']) {
    server.get(`/js/${kind}.js`, async (_req, reply) => reply.type('text/javascript').send(send(script(kind), kind)))
    server.get(`/css/${kind}.css`, async (_req, reply) => reply.type('text/css').send(send(style(kind, STYLES[kind] as number), kind)))
  }
  // The body is rewritten by the proxy: not compressed, so that it can be.
  server.get('/js/tampered-body.js', { compress: false }, async (_req, reply) => reply.type('text/javascript').send(script('tampered-body')))
  server.get('/js/tampered-digest.js', async (_req, reply) => reply.type('text/javascript').send(script('tampered-digest')))
  server.get('/css/tampered.css', async (_req, reply) => reply.type('text/css').send(style('tampered', BLOCKED_STYLES.tampered as number)))
  await server.listen({ port: 0, host: '127.0.0.1' })
  return server
}

/** sha-512 of something else: a wrong value of the right length. */
const WRONG_SHA512 = sf('not the content', 'sha-512')

/**
 * A proxy in front of `target` that passes everything through, records the
 * fields each response carried, and spoils the controls: a byte of
 * tampered-body.js changes (its Unencoded-Digest is the plugin's, of the
 * original), and the sha-512 member of tampered-digest.js's and
 * tampered.css's Unencoded-Digest is replaced by a wrong one (the others, a
 * right sha-256 among them, are kept).
 */
function proxy (t: Closeable, target: number, seen: Map<string, IncomingHttpHeaders>): Promise<number> {
  return spoilingProxy(t, target, (url, _request, response, headers) => {
    seen.set(url, response)
    const value = headers['unencoded-digest']
    if ((url === '/js/tampered-digest.js' || url === '/css/tampered.css') && typeof value === 'string') {
      headers['unencoded-digest'] = value.replace(/sha-512=:[^:]*:/, WRONG_SHA512.replace(/\$/g, '$$$$'))
    }
    return url === '/js/tampered-body.js'
  })
}

const MODES: Array<[string, FastifyDigestFieldsOptions]> = [
  ['default mode', { contentDigest: true, reprDigest: true, unencodedDigest: ['sha-256', 'sha-512'] }],
  ['strict mode', { strict: true, algorithms: ['sha-256', 'sha-512', 'md5'], reprDigest: true, unencodedDigest: ['sha-256', 'sha-512', 'md5'] }]
]

for (const [mode, opts] of MODES) {
  for (const coding of ['identity', ...CODINGS]) {
    test(`Chromium runs every script and applies every stylesheet, ${mode}, ${coding}; it blocks the spoiled ones`, { skip }, async (t) => {
      const server = await app(t, opts, coding)
      const seen = new Map<string, IncomingHttpHeaders>()
      const port = await proxy(t, (server.server.address() as AddressInfo).port, seen)
      const result = await pageResult<{ ran: string[], widths: Record<string, string> }>(t, chromium as string, `http://127.0.0.1:${port}/`)
      if (result === null) return
      t.same([...result.ran].sort(), [...SCRIPTS].sort(), 'every script ran, no spoiled one')
      for (const [name, width] of Object.entries(STYLES)) t.equal(result.widths[name], `${width}px`, `stylesheet ${name} applied`)
      for (const name of Object.keys(BLOCKED_STYLES)) t.equal(result.widths[name], '1px', `stylesheet ${name} blocked`)
      // What Chromium checked: every response carried Unencoded-Digest, coded as forced.
      for (const [name, url] of [...Object.entries(SCRIPT_URLS), ...Object.entries(STYLE_URLS)]) {
        const headers = seen.get(url)
        t.ok(headers?.['unencoded-digest'], `${url}: Unencoded-Digest sent`)
        t.match(headers?.['unencoded-digest'], /sha-256=:.*sha-512=:/, `${url}: sha-256 and sha-512`)
        const pre = url.startsWith('/pre/')
        const expected = pre ? (url.endsWith('.js') ? 'br' : 'gzip') : name === 'tampered-body' || coding === 'identity' ? undefined : coding
        t.equal(headers?.['content-encoding'], expected, `${url}: content coding`)
      }
    })
  }
}
