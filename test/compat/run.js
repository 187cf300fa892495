'use strict'
// npm run test:compat: every cell of the compatibility matrix (matrix.js, the
// README's table). For each Node.js release: the `latest` combination runs
// the whole suite (on the Node.js running npm that is `npm test`'s own run,
// so it is skipped here), the others put other majors of the packages in
// place through test/compat/aliases.cjs and run the integration and client
// files; a combination's `nodes` names the majors it runs on. Coverage is
// `npm test`'s job; these runs only pass or fail.
//
// COMPAT_NODES=22,24 limits the Node.js majors; COMPAT_COMBOS=older the
// combinations (names from matrix.js).
const { spawnSync } = require('node:child_process')
const { existsSync, mkdirSync, readdirSync, renameSync, rmSync } = require('node:fs')
const { join } = require('node:path')
const { nodes, packages, combos, major } = require('./matrix.js')

const root = join(__dirname, '..', '..')
const cache = join(root, 'node_modules', '.cache', 'fastify-digest-fields-compat')
const tap = join(root, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs')

function run (command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: options.stdio ?? 'pipe', env: options.env ?? process.env })
  if (result.error) throw result.error
  return result
}

/** A Node.js binary of `version` ('20' = the running one), from the registry's node-<platform>-<arch> package. */
function nodeBinary (version) {
  if (major(version) === major(process.versions.node)) return process.execPath
  const dir = join(cache, `node-${version}`)
  const binary = join(dir, 'package', 'bin', process.platform === 'win32' ? 'node.exe' : 'node')
  if (!existsSync(binary)) {
    mkdirSync(dir, { recursive: true })
    const platform = process.platform === 'win32' ? 'win' : process.platform
    const packed = run('npm', ['pack', `node-${platform}-${process.arch}@${version}`, '--pack-destination', dir, '--silent'])
    if (packed.status !== 0) throw new Error(`npm pack node-${platform}-${process.arch}@${version}: ${packed.stderr}`)
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'))
    const untar = run('tar', ['-xzf', join(dir, tarball), '-C', dir])
    if (untar.status !== 0) throw new Error(`tar: ${untar.stderr}`)
    rmSync(join(dir, tarball))
  }
  return binary
}

/** The major the suite runs `name` on (its devDependency). */
function currentMajor (name) {
  const { current, tested } = packages[name]
  return major((tested ?? current).replace(/^\^/, ''))
}

/** The alias map of a combination: package name → alias of the wanted major. */
function aliasesOf (combo) {
  const map = {}
  for (const [name, wanted] of Object.entries(combo.use)) {
    if (wanted === currentMajor(name)) continue
    const alias = packages[name].aliases[wanted]
    if (alias === undefined) throw new Error(`matrix.js: no alias for ${name} ${wanted}`)
    map[name] = alias
  }
  return map
}

/** The majors that CommonJS and ES module code of ours get for each package, read under the aliases. */
function loadedMajors (node, env) {
  const script = join(__dirname, 'versions.mjs')
  const result = run(node, [script, ...Object.keys(packages)], { env })
  if (result.status !== 0) throw new Error(`versions.mjs: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

function main () {
  const onlyNodes = process.env.COMPAT_NODES ? process.env.COMPAT_NODES.split(',') : null
  const onlyCombos = process.env.COMPAT_COMBOS ? process.env.COMPAT_COMBOS.split(',') : null
  const results = []
  for (const version of nodes) {
    if (onlyNodes && !onlyNodes.includes(major(version))) continue
    const node = nodeBinary(version)
    const actual = run(node, ['--version']).stdout.trim()
    if (major(actual.slice(1)) !== major(version)) throw new Error(`${node} is ${actual}, not Node.js ${version}`)
    for (const combo of combos) {
      if (onlyCombos && !onlyCombos.includes(combo.name)) continue
      if (combo.nodes && !combo.nodes.includes(major(version))) continue
      const cell = `Node.js ${actual}, ${combo.name}`
      if (combo.files === 'all' && Object.keys(aliasesOf(combo)).length === 0 && node === process.execPath) {
        console.log(`# ${cell}: the whole suite is npm test's own run (with coverage), skipped here`)
        continue
      }
      const aliases = aliasesOf(combo)
      const env = { ...process.env, COMPAT_ALIASES: JSON.stringify(aliases), NODE_OPTIONS: `--require ${join(__dirname, 'aliases.cjs')}` }
      delete env.TAP_SNAPSHOT
      const majors = loadedMajors(node, env)
      const wrong = Object.entries(majors).filter(([name, got]) => {
        const want = combo.use[name] ?? currentMajor(name)
        return got.cjs !== want || got.esm !== want
      })
      const shown = Object.entries(majors).map(([name, got]) => `${name} ${got.version}`).join(', ')
      console.log(`# ${cell}: ${shown}`)
      if (wrong.length > 0) {
        results.push({ cell, ok: false, why: `loaded the wrong majors: ${JSON.stringify(wrong)}` })
        continue
      }
      const files = combo.files === 'all' ? [] : combo.files
      const started = Date.now()
      // TAP output, shown whole only when the cell fails.
      const tapRun = run(node, [tap, '--disable-coverage', '-R', 'tap', ...files], { env })
      const seconds = ((Date.now() - started) / 1000).toFixed(1)
      const summary = (tapRun.stdout.match(/^# \{ total.*$/m) ?? ['no tap summary'])[0]
      if (tapRun.status !== 0) process.stdout.write(tapRun.stdout + tapRun.stderr)
      console.log(`#   ${summary.slice(2)} (${seconds} s)`)
      results.push({ cell, ok: tapRun.status === 0, why: `${summary.slice(2)}, ${seconds} s${tapRun.status === 0 ? '' : `, tap exited ${tapRun.status}`}` })
    }
  }
  console.log('\n# compatibility matrix')
  for (const { cell, ok, why } of results) console.log(`${ok ? 'ok    ' : 'FAILED'} ${cell} (${why})`)
  const failed = results.filter((r) => !r.ok).length
  console.log(`compat: ${results.length - failed} passed, ${failed} failed`)
  process.exitCode = failed === 0 && results.length > 0 ? 0 : 1
}

// A partial download must not pass for a binary next time.
process.on('uncaughtException', (error) => {
  console.error(error)
  if (existsSync(cache)) renameSync(cache, `${cache}.broken-${Date.now()}`)
  process.exit(1)
})

main()
