// A real browser for the tests: headless Chromium, launched once per page
// with a fresh profile (so nothing is served from its HTTP cache), its DOM
// dumped once the page's scripts have run. Where Chromium is not installed,
// the browser tests are skipped with a message, except under CI=true, where
// a missing Chromium is an error (.ci/run installs it).
import { spawn } from 'node:child_process'
import { request as httpRequest, createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { accessSync, constants } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

/** Executable names of Chromium (Debian's package is `chromium`). */
const NAMES = ['chromium', 'chromium-browser']

function executable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** $CHROMIUM, else `chromium` (or `chromium-browser`) on the PATH; null when there is none. */
export function findChromium (): string | null {
  const given = process.env.CHROMIUM
  if (given !== undefined && given !== '') return executable(given) ? given : null
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of NAMES) {
      const path = join(dir, name)
      if (dir !== '' && executable(path)) return path
    }
  }
  return null
}

const INSTALL = 'install it (Debian/Ubuntu: apt-get install chromium) or point CHROMIUM at it'

/**
 * The Chromium to run, or the reason the browser tests are skipped (tap's
 * `skip` option). Throws under CI=true when Chromium is missing: there the
 * browser tests must run.
 */
export function chromiumOrSkip (): { chromium: string, skip: false } | { chromium: null, skip: string } {
  const chromium = findChromium()
  if (chromium !== null) return { chromium, skip: false }
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
    throw new Error(`CI is set and Chromium was not found: ${INSTALL}`)
  }
  return { chromium: null, skip: `Chromium was not found: the browser tests are skipped (${INSTALL}; under CI=true they fail instead)` }
}

/**
 * The flags of a headless run that leaves nothing behind and talks to
 * nothing but the page's server: no sandbox (needed as root), no GPU, no
 * QUIC, no first-run tasks, no background requests, component updates or
 * sync. The virtual time budget lets the page load and its scripts run
 * before the DOM is dumped.
 */
function chromiumArgs (profile: string, url: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--user-data-dir=${profile}`,
    '--virtual-time-budget=3000',
    '--dump-dom',
    url
  ]
}

/**
 * Load `url` in a new headless Chromium with a fresh profile and return its
 * DOM as serialized after the page ran. Rejects when Chromium fails or takes
 * longer than `timeoutMs` (then its process group is killed).
 */
export async function dumpDom (chromium: string, url: string, timeoutMs = 30_000): Promise<string> {
  const profile = await mkdtemp(join(tmpdir(), 'digest-chromium-'))
  try {
    return await new Promise<string>((resolve, reject) => {
      // A process group of its own, so that a timeout ends Chromium's helper processes too.
      const child = spawn(chromium, chromiumArgs(profile, url), { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
      const out: Buffer[] = []
      const err: Buffer[] = []
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
      child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
      const timer = setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL')
        } catch {}
        reject(new Error(`Chromium took more than ${timeoutMs} ms for ${url}`))
      }, timeoutMs)
      child.on('error', (error) => {
        clearTimeout(timer)
        reject(error)
      })
      child.on('close', (code) => {
        clearTimeout(timer)
        if (code === 0) resolve(Buffer.concat(out).toString('utf8'))
        else reject(new Error(`Chromium exited with ${String(code)} for ${url}: ${Buffer.concat(err).toString('utf8').slice(-2000)}`))
      })
    })
  } finally {
    await rm(profile, { recursive: true, force: true })
  }
}

export interface Closeable { teardown (fn: () => unknown): void }

/**
 * What a proxy does to one response: `headers` (a copy of the response's
 * fields, `response`) may be changed in place; true: the body is changed
 * too, its first "tampered-body" made "tampered-b0dy" (the fields the
 * plugin sent describe the original).
 */
export type Spoil = (url: string, request: IncomingHttpHeaders, response: IncomingHttpHeaders, headers: OutgoingHttpHeaders) => boolean

/** A proxy in front of `target` (127.0.0.1) that passes everything through but what `spoil` changes. */
export async function spoilingProxy (t: Closeable, target: number, spoil: Spoil): Promise<number> {
  const server: Server = createServer((req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers }, (up) => {
      const headers: OutgoingHttpHeaders = { ...up.headers }
      if (!spoil(req.url as string, req.headers, up.headers, headers)) {
        res.writeHead(up.statusCode as number, headers)
        up.pipe(res)
        return
      }
      const chunks: Buffer[] = []
      up.on('data', (chunk: Buffer) => chunks.push(chunk))
      up.on('end', () => {
        const body = Buffer.from(Buffer.concat(chunks).toString('latin1').replace('tampered-body', 'tampered-b0dy'), 'latin1')
        delete headers['transfer-encoding']
        headers['content-length'] = String(body.length)
        res.writeHead(up.statusCode as number, headers)
        res.end(body)
      })
    })
    upstream.on('error', () => res.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}

/**
 * The JSON a test page writes into its `<pre id="result">`, from the DOM
 * Chromium dumps for `url`; null, with a failed assertion showing the page,
 * when there is none.
 */
export async function pageResult<T> (t: { fail (message: string): unknown }, chromium: string, url: string): Promise<T | null> {
  const dom = await dumpDom(chromium, url)
  const match = /<pre id="result">(.*?)<\/pre>/s.exec(dom)
  if (match === null) {
    t.fail(`no result in the page: ${dom.slice(0, 2000)}`)
    return null
  }
  return JSON.parse(match[1] as string) as T
}
