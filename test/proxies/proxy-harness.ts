// Real reverse proxies and caches in front of the plugin: Debian's nginx,
// Caddy, HAProxy and Varnish, each started from a configuration the test
// writes into a private directory, on a free loopback port, and stopped at
// the test's teardown. Where a proxy is not installed its tests are skipped
// with a message, except under CI=true, where a missing proxy is an error
// (.ci/run installs them).
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises'
import { createServer, connect, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'

export type ProxyKind = 'nginx' | 'caddy' | 'haproxy' | 'varnish'

/** Each proxy's executable and the Debian package that installs it. */
const BINARIES: Record<ProxyKind, { name: string, package: string }> = {
  nginx: { name: 'nginx', package: 'nginx' },
  caddy: { name: 'caddy', package: 'caddy' },
  haproxy: { name: 'haproxy', package: 'haproxy' },
  varnish: { name: 'varnishd', package: 'varnish' }
}

// Debian installs nginx, haproxy and varnishd in /usr/sbin, which a user's PATH may lack.
const SBIN = ['/usr/sbin', '/usr/local/sbin', '/sbin']

function executable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The proxy's executable on the PATH (or in an sbin directory); null when there is none. */
export function findProxy (kind: ProxyKind): string | null {
  const { name } = BINARIES[kind]
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), ...SBIN]) {
    if (dir !== '' && executable(join(dir, name))) return join(dir, name)
  }
  return null
}

const underCI = (): boolean => process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false'

/**
 * tap's `skip` option for a proxy's tests: false when it is installed, else
 * the reason. Throws under CI=true when it is missing: there the tests must run.
 */
export function proxySkip (kind: ProxyKind): false | string {
  if (findProxy(kind) !== null) return false
  const install = `install it (Debian/Ubuntu: apt-get install ${BINARIES[kind].package})`
  if (underCI()) throw new Error(`CI is set and ${BINARIES[kind].name} was not found: ${install}`)
  return `${BINARIES[kind].name} was not found: its tests are skipped (${install}; under CI=true they fail instead)`
}

/** A loopback port free at the time of asking (the proxy binds it next). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Where a proxy's configuration is written: its port, the app's port and its private directory. */
export interface ProxyPlace {
  /** The port the proxy listens on for clients (127.0.0.1). */
  readonly port: number
  /**
   * A second free port, for proxies that speak cleartext HTTP/2 (h2c, prior
   * knowledge) on a listener of its own (nginx `listen … http2`, HAProxy `proto h2`).
   */
  readonly h2port: number
  /** The port of the Fastify app behind it (127.0.0.1). */
  readonly upstream: number
  /** A private directory for the proxy's configuration, temp files, cache and logs. */
  readonly dir: string
}

export interface RunningProxy extends ProxyPlace {
  readonly kind: ProxyKind
  /** http://127.0.0.1:port */
  readonly origin: string
  /** http://127.0.0.1:h2port */
  readonly h2origin: string
  /** What the proxy wrote to stdout and stderr so far (for failure messages). */
  output (): string
}

export interface Closeable { teardown (fn: () => unknown): void }

/** The configuration file's name and the command line that runs the proxy in the foreground. */
function command (kind: ProxyKind, place: ProxyPlace): { file: string, args: string[] } {
  const { dir, port } = place
  switch (kind) {
    case 'nginx':
      return { file: 'nginx.conf', args: ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'] }
    case 'caddy':
      return { file: 'Caddyfile', args: ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'] }
    case 'haproxy':
      return { file: 'haproxy.cfg', args: ['-f', join(dir, 'haproxy.cfg'), '-db'] }
    case 'varnish':
      // -j none: Varnish's default jail drops to a user that cannot read the private directory.
      return {
        file: 'default.vcl',
        args: ['-F', '-n', join(dir, 'varnish'), '-a', `127.0.0.1:${port}`, '-f', join(dir, 'default.vcl'),
          '-s', 'malloc,32m', '-T', 'none', '-j', 'none', '-p', 'feature=+http2']
      }
  }
}

/**
 * The lines every nginx configuration here starts with: the pid, logs and
 * temp paths inside the private directory (nginx -p), in the foreground;
 * `user root` when run as root, whose default user could not read the directory.
 */
export function nginxPreamble (dir: string): string {
  return [
    typeof process.getuid === 'function' && process.getuid() === 0 ? 'user root;' : '',
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} warn;`,
    'events { worker_connections 256; }'
  ].join('\n')
}

/** nginx's http-level temp paths inside the private directory. */
export function nginxTempPaths (dir: string): string {
  return ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']
    .map((name) => `${name}_temp_path ${join(dir, `${name}_temp`)};`).join('\n')
}

async function listening (port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the proxy exited (${String(child.exitCode ?? child.signalCode)}) before listening: ${output()}`)
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => { socket.destroy(); resolve(true) })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    if (Date.now() > deadline) throw new Error(`the proxy did not listen on ${port} within 20 s: ${output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Start `kind` in front of the app on `upstream`, with the configuration
 * `config` returns for its place; resolves once it accepts connections.
 * It is stopped (and its directory removed) at `t`'s teardown.
 */
export async function startProxy (t: Closeable, kind: ProxyKind, upstream: number,
  config: (place: ProxyPlace) => string): Promise<RunningProxy> {
  const binary = findProxy(kind)
  if (binary === null) throw new Error(`${kind} is not installed`)
  const dir = await mkdtemp(join(tmpdir(), `digest-${kind}-`))
  const place: ProxyPlace = { port: await freePort(), h2port: await freePort(), upstream, dir }
  const { file, args } = command(kind, place)
  await writeFile(join(dir, file), config(place))
  // Caddy keeps its state under $HOME / $XDG_*: kept in the private directory.
  const env = { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir }
  const child = spawn(binary, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const chunks: Buffer[] = []
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk))
  child.stderr?.on('data', (chunk: Buffer) => chunks.push(chunk))
  const output = (): string => Buffer.concat(chunks).toString('utf8').slice(-4000)
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(timer)
    await rm(dir, { recursive: true, force: true })
  })
  await listening(place.port, child, output)
  return { ...place, kind, origin: `http://127.0.0.1:${place.port}`, h2origin: `http://127.0.0.1:${place.h2port}`, output }
}

/** A file the proxy wrote in its directory (a log), or '' when there is none. */
export async function proxyFile (proxy: RunningProxy, name: string): Promise<string> {
  return await readFile(join(proxy.dir, name), 'utf8').catch(() => '')
}
