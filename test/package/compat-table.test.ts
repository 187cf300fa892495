// The README's compatibility block is the matrix that `npm run test:compat`
// runs (test/compat/matrix.js): every cell it shows is a run, and the
// supported fastify range is the one package.json and the plugin declare.
import { test } from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

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
  t.ok(matrix.combos.some((c) => c.files === 'all' && Object.keys(c.use).length === 0), 'the latest majors run the whole suite')
})

test('the plugin declares the fastify range of the table', async (t) => {
  const source = readFileSync(join(root, 'lib', 'index.ts'), 'utf8')
  t.match(source, new RegExp(`fastify: '\\${matrix.packages.fastify?.current}'`))
})
