'use strict'

// Pack test (`npm run test:pack`, the last step of `npm test`): the package
// as `npm pack` makes it (prepack builds dist/ afresh), then
//   * its file list: dist/**/*.js for every lib/**/*.ts, the types, README,
//     LICENSE, CHANGELOG, docs/ and examples/ (which the README names) and
//     nothing else (no tests, benchmarks, sources, maps pointing at files
//     the tarball lacks);
//   * publint and @arethetypeswrong/cli on the tarball: no message at all;
//   * the tarball installed in a throwaway project in os.tmpdir() next to
//     fastify 5 and @fastify/compress 9 (and typescript ~5.9, @types/node 20):
//     require() and import of it, each making one gzipped request whose
//     Content-Digest and Repr-Digest are checked with node:crypto, and
//     test/pack/consumer/*.{mts,cts} type-checked by tsc under node16 and
//     bundler resolution.
// Plain Node.js. Prints one line per check and a summary, exits 1 on any
// failure, removes its temp dirs. The consumer's installs use the versions
// installed in this repository where they match (served from npm's cache).

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const root = path.join(__dirname, '..', '..')
const fixtures = path.join(__dirname, 'consumer')
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'))

// What the consumer installs next to the tarball: name and wanted range
// (a major, or major.minor for typescript, as npm reads "5.9").
const consumerDeps = [
  ['fastify', '5'],
  ['@fastify/compress', '9'],
  ['typescript', '5.9'],
  ['@types/node', '20'],
  ['undici', '7']
]

const INSTALL_TIMEOUT = 300_000
const STEP_TIMEOUT = 120_000

// The checks, in the order they are reported.
const CHECK = {
  pack: 'npm pack (prepack builds dist/)',
  contents: 'tarball contents',
  publint: 'publint',
  attw: 'attw',
  install: 'consumer install',
  maps: 'installed files: source maps',
  require: 'require() (CommonJS)',
  import: 'import (ES module)',
  node16: 'tsc node16 (module/moduleResolution node16, strict)',
  bundler: 'tsc bundler (module preserve, moduleResolution bundler, strict)'
}

const results = []
const children = new Set()
const started = Date.now()

function seconds (ms) {
  return `${(ms / 1000).toFixed(1)} s`
}

// Runs a command; resolves with its output whatever the exit code.
function run (command, args, { cwd = root, env = process.env, timeout = STEP_TIMEOUT, shell = false } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now()
    const child = spawn(command, args, { cwd, env, timeout, shell, killSignal: 'SIGKILL', stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk })
    child.on('error', (err) => { stderr += `\n${err.message}` })
    child.on('close', (code, signal) => {
      children.delete(child)
      resolve({ code: signal ? `${signal} after ${seconds(Date.now() - t0)}` : code, stdout, stderr })
    })
  })
}

function failure (message, { stdout = '', stderr = '' } = {}) {
  const output = [stdout, stderr].map((s) => s.trim()).filter(Boolean).join('\n')
  return new Error(output ? `${message}\n${output}` : message)
}

async function runOk (what, command, args, options) {
  const res = await run(command, args, options)
  if (res.code !== 0) throw failure(`${what} exited with ${res.code}`, res)
  return res
}

// npm itself: the one running this script when started by npm, else `npm`.
function npm (args, options) {
  const cli = process.env.npm_execpath
  if (cli && /npm-cli\.js$/.test(cli)) return runOk(`npm ${args[0]}`, process.execPath, [cli, ...args], options)
  return runOk(`npm ${args[0]}`, process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { shell: process.platform === 'win32', ...options })
}

// A package's bin script, run with this Node.js.
function bin (dir, name, command = name) {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'node_modules', name, 'package.json'), 'utf8'))
  const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin[command]
  return path.join(dir, 'node_modules', name, rel)
}

// The consumer is another project: npm settings this repository's npm run
// exported (npm_config_* of its .npmrc, npm_package_*, npm_lifecycle_*) stay
// out; where npm caches and which registry it uses stay in.
const keptNpmConfig = /^npm_config_(cache|userconfig|globalconfig|registry|cafile|ca|proxy|https_proxy|noproxy|strict_ssl|offline|prefer_offline|prefer_online|fetch_[a-z_]+)$/i
function consumerEnv () {
  const env = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) && !keptNpmConfig.test(key)) continue
    if (key === 'NODE_OPTIONS') continue
    env[key] = value
  }
  return env
}

// The consumer's dependency specs: the exact version installed here when it
// is in the wanted range, else the range.
function consumerSpecs () {
  return consumerDeps.map(([name, wanted]) => {
    try {
      const { version } = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8'))
      if (version.startsWith(`${wanted}.`)) return `${name}@${version}`
    } catch {}
    return `${name}@${wanted}`
  })
}

// The files the tarball must hold, exactly.
function distFiles () {
  return fs.readdirSync(path.join(root, 'lib'), { recursive: true })
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .map((file) => `dist/${file.slice(0, -3)}.js`)
}

// Every file of a folder of the repository, as paths from the root.
function folderFiles (folder) {
  return fs.readdirSync(path.join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath ?? entry.path, entry.name)).split(path.sep).join('/'))
}

function checkFileList (files) {
  const packed = new Set(files.map((f) => f.path))
  const dist = distFiles()
  const shown = [...folderFiles('docs'), ...folderFiles('examples')]
  const expected = new Set(['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'types/index.d.ts', 'types/client.d.ts', 'types/algorithms.d.ts', 'client/package.json', ...dist, ...shown])
  const missing = [...expected].filter((f) => !packed.has(f))
  const unexpected = [...packed].filter((f) => !expected.has(f))
  if (missing.length || unexpected.length) {
    throw failure([
      missing.length ? `missing: ${missing.join(', ')}` : '',
      unexpected.length ? `not meant to be published: ${unexpected.join(', ')}` : ''
    ].filter(Boolean).join('; '))
  }
  return `${packed.size} files: dist/**/*.js of the ${dist.length} lib/**/*.ts, types/index.d.ts, types/client.d.ts, types/algorithms.d.ts (the algorithm keys both share), client/package.json (the node10 shim of fastify-digest-fields/client), the ${shown.length} files of docs/ and examples/ (named by the README), README.md, LICENSE, CHANGELOG.md, package.json`
}

// Every sourceMappingURL of a shipped .js names a shipped map whose sources
// are shipped too (today there are none: tsconfig.json emits no maps).
function checkSourceMaps (dir, files) {
  const shipped = new Set(files.map((f) => f.path))
  const problems = []
  let maps = 0
  for (const file of shipped) {
    if (!file.endsWith('.js')) continue
    const text = fs.readFileSync(path.join(dir, file), 'utf8')
    for (const [, url] of text.matchAll(/^\/\/# sourceMappingURL=(\S+)\s*$/gm)) {
      maps++
      const mapPath = path.posix.join(path.posix.dirname(file), url)
      if (url.startsWith('data:')) continue
      if (!shipped.has(mapPath)) {
        problems.push(`${file}: ${url} is not in the tarball`)
        continue
      }
      const map = JSON.parse(fs.readFileSync(path.join(dir, mapPath), 'utf8'))
      map.sources.forEach((source, i) => {
        const sourcePath = path.posix.join(path.posix.dirname(mapPath), map.sourceRoot ?? '', source)
        if (!shipped.has(sourcePath) && map.sourcesContent?.[i] == null) problems.push(`${mapPath}: source ${source} is not in the tarball`)
      })
    }
  }
  if (problems.length) throw failure(problems.join('\n'))
  return maps === 0 ? 'no source maps' : `${maps} source maps, their sources shipped`
}

async function check (name, fn) {
  const t0 = Date.now()
  try {
    const detail = await fn()
    results.push({ name, ok: true, ms: Date.now() - t0, detail })
    console.log(`ok   ${name} (${seconds(Date.now() - t0)})${detail ? `: ${detail}` : ''}`)
    return true
  } catch (err) {
    results.push({ name, ok: false, ms: Date.now() - t0, detail: err.message })
    console.log(`FAIL ${name} (${seconds(Date.now() - t0)})\n${err.message.replace(/^/gm, '     ')}`)
    return false
  }
}

function skip (...names) {
  for (const name of names) {
    results.push({ name, ok: false, skipped: true })
    console.log(`skip ${name}`)
  }
}

let tmp = null

// Interrupted (Ctrl-C, a CI timeout): the commands started here are stopped
// and the temp dirs removed.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    for (const child of children) child.kill('SIGKILL')
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
    console.log(`\npack test: stopped by ${signal}`)
    process.exit(1)
  })
}

async function main () {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fastify-digest-fields-pack-'))
  const packDir = path.join(tmp, 'pack')
  const consumer = path.join(tmp, 'consumer')
  fs.mkdirSync(packDir)
  fs.mkdirSync(consumer)
  console.log(`pack test of ${pkg.name}@${pkg.version} in ${tmp}`)

  try {
    let packed
    const packOk = await check(CHECK.pack, async () => {
      const res = await npm(['pack', '--json', '--pack-destination', packDir])
      packed = JSON.parse(res.stdout)[0]
      return `${packed.filename}, ${(packed.size / 1024).toFixed(1)} KiB`
    })
    if (!packOk) {
      skip(...Object.values(CHECK).slice(1))
      return
    }
    const tarball = path.join(packDir, packed.filename)

    await check(CHECK.contents, () => checkFileList(packed.files))

    const lint = Promise.all([
      check(CHECK.publint, async () => {
        const { publint } = await import('publint')
        const { formatMessage } = await import('publint/utils')
        const data = fs.readFileSync(tarball)
        const { messages, pkg: linted } = await publint({
          pack: { tarball: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) },
          level: 'suggestion',
          strict: true
        })
        if (messages.length) {
          throw failure(messages.map((m) => `${m.type}: ${formatMessage(m, linted, { color: false })}`).join('\n'))
        }
        return 'no errors, warnings or suggestions'
      }),
      check(CHECK.attw, async () => {
        const args = [bin(root, '@arethetypeswrong/cli', 'attw'), tarball, '--format', 'ascii', '--no-emoji', '--no-color', '--no-definitely-typed']
        const res = await runOk('attw', process.execPath, args)
        if (!/No problems found/.test(res.stdout)) throw failure('attw did not report "No problems found"', res)
        return 'no problems (node10, node16 from CJS and ESM, bundler)'
      })
    ])

    const env = consumerEnv()
    const installOk = await check(CHECK.install, async () => {
      fs.writeFileSync(path.join(consumer, 'package.json'), JSON.stringify({
        name: 'fastify-digest-fields-pack-consumer', version: '0.0.0', private: true, type: 'commonjs'
      }, null, 2))
      for (const file of fs.readdirSync(fixtures)) fs.copyFileSync(path.join(fixtures, file), path.join(consumer, file))
      const specs = consumerSpecs()
      await npm(['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball, ...specs],
        { cwd: consumer, env, timeout: INSTALL_TIMEOUT })
      return specs.join(', ')
    })

    if (installOk) {
      const installed = path.join(consumer, 'node_modules', pkg.name)
      await check(CHECK.maps, () => checkSourceMaps(installed, packed.files))
      const node = (file) => runOk(`node ${file}`, process.execPath, [file], { cwd: consumer, env })
      const digests = (res) => {
        const { gzipBytes, jsonBytes } = JSON.parse(res.stdout.trim().split('\n').pop())
        return `Content-Digest = sha-256 of the ${gzipBytes} gzip bytes sent, Repr-Digest = sha-256 of the ${jsonBytes} JSON bytes`
      }
      const tsc = (config) => runOk(`tsc -p ${config}`, process.execPath, [bin(consumer, 'typescript', 'tsc'), '-p', config], { cwd: consumer, env })
      await Promise.all([
        check(CHECK.require, async () => digests(await node('require.cjs'))),
        check(CHECK.import, async () => digests(await node('import.mjs')))
      ])
      await Promise.all([
        check(CHECK.node16, async () => { await tsc('tsconfig.node16.json') }),
        check(CHECK.bundler, async () => { await tsc('tsconfig.bundler.json') })
      ])
    } else {
      skip(CHECK.maps, CHECK.require, CHECK.import, CHECK.node16, CHECK.bundler)
    }
    await lint
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
    tmp = null
  }
}

main().catch((err) => {
  results.push({ name: 'pack test', ok: false, detail: err.stack })
  console.log(`FAIL pack test\n${err.stack}`)
}).finally(() => {
  const failed = results.filter((r) => !r.ok)
  const passed = results.length - failed.length
  console.log(`\npack test: ${passed} passed, ${failed.length} failed or skipped, ${seconds(Date.now() - started)}`)
  for (const r of failed) console.log(`  ${r.skipped ? 'skipped' : 'failed'}: ${r.name}`)
  process.exitCode = failed.length ? 1 : 0
})
