// The README's compatibility block is the matrix that `npm run test:compat`
// runs (test/compat/matrix.js): every cell it shows is a run, and the
// supported fastify range is the one package.json and the plugin declare.
import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import semver = require('semver')
import Fastify from 'fastify'

const root = join(__dirname, '..', '..')
const matrix = require('../compat/matrix.js') as {
  nodes: string[]
  packages: Record<string, { current: string, aliases: Record<string, string> }>
  combos: Array<{ name: string, use: Record<string, string>, files: string[] | 'all' }>
  renderTable: () => string
}

test('the README shows the matrix that test:compat runs', async (t) => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const block = /<!-- compat:start -->\n([\s\S]*?)\n<!-- compat:end -->/.exec(readme)
  t.ok(block, 'the README has the compat markers')
  t.equal(block?.[1], matrix.renderTable(), 'README block = renderTable() (regenerate it from test/compat/matrix.js)')
})

test('every major the table lists is installed under its alias, and run by some combination', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string>, peerDependencies: Record<string, string> }
  t.equal(matrix.packages.fastify?.current, pkg.peerDependencies.fastify, 'the fastify range is the peer dependency')
  for (const [name, { aliases }] of Object.entries(matrix.packages)) {
    for (const [wanted, alias] of Object.entries(aliases)) {
      t.match(pkg.devDependencies[alias], new RegExp(`^npm:${name.replace('/', '\\/')}@\\^?${wanted}\\.`), `${name} ${wanted} is the devDependency ${alias}`)
      t.ok(matrix.combos.some((c) => c.use[name] === wanted), `${name} ${wanted} is used by a combination`)
    }
  }
  t.ok(matrix.combos.some((c) => c.files === 'all' && Object.keys(c.use).length === 0), 'the devDependencies run the whole suite')
  t.ok(matrix.combos.some((c) => c.files === 'all' && c.use.undici === '8'), 'undici 8 runs the whole suite')
  for (const name of ['undici', 'fastify']) {
    t.equal(pkg.peerDependencies[name]?.split(' || ').length, 2, `${name}: the peer range names both majors tested`)
  }
})

test('the declared ranges accept what the table tests, and refuse what it does not', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { peerDependencies: { fastify: string, undici: string } }
  const fastify6 = (JSON.parse(readFileSync(require.resolve('fastify6/package.json'), 'utf8')) as { version: string }).version
  const undici8 = (JSON.parse(readFileSync(require.resolve('undici8/package.json'), 'utf8')) as { version: string }).version
  // npm checks a peer range without prereleases beyond the range's own (semver's default).
  for (const version of ['5.12.8', '5.13.0', fastify6, '6.0.0', '6.3.1']) t.ok(semver.satisfies(version, pkg.peerDependencies.fastify), `fastify ${version}`)
  for (const version of ['5.12.7', '4.29.0', '7.0.0', '7.0.0-alpha.0']) t.notOk(semver.satisfies(version, pkg.peerDependencies.fastify), `not fastify ${version}`)
  for (const version of ['7.30.2', '7.31.0', undici8, '8.20.0']) t.ok(semver.satisfies(version, pkg.peerDependencies.undici), `undici ${version}`)
  for (const version of ['7.30.1', '6.21.0', '9.0.0']) t.notOk(semver.satisfies(version, pkg.peerDependencies.undici), `not undici ${version}`)
})

test('fastify 6.0.0 loads the plugin: its range is checked once 6 is not a prerelease', async (t) => {
  // fastify skips the check for its own prereleases (lib/plugin-utils.js checkVersion, rcRegex), the same
  // function in 5.12.8 and 6.0.0-alpha.4; it is run here on an instance that reports a released version
  // (fastify 6 itself needs Node.js 24: the compat matrix runs the suite on it).
  const plugin = require('../../lib/index') as import('fastify').FastifyPluginCallback
  for (const version of ['6.0.0', '6.2.0']) {
    const app = Fastify()
    Object.defineProperty(app, 'version', { value: version })
    await t.resolves(async () => { await app.register(plugin).ready() }, `registered on fastify ${version}`)
    await app.close()
  }
  const app = Fastify()
  Object.defineProperty(app, 'version', { value: '7.0.0' })
  await t.rejects(async () => { await app.register(plugin).ready() }, { code: 'FST_ERR_PLUGIN_VERSION_MISMATCH' }, 'a major not declared is refused')
})

test('the plugin declares the fastify range of the table', async (t) => {
  const source = readFileSync(join(root, 'lib', 'index.ts'), 'utf8')
  t.ok(source.includes(`fastify: '${matrix.packages.fastify?.current}'`), 'fastify-plugin gets the peer range')
})
