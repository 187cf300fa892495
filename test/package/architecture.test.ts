// docs/architecture.md as a test: the pure core (and the client) import no
// fastify (not even its types, nor through a module that does), the core is
// at least half of the plugin's lines; lib/index.ts stays small; every
// module of lib/ is placed in the document's table.
import { test } from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const root = join(__dirname, '..', '..')

/** Every lib/ module, relative to the root. */
function modules (): string[] {
  return (readdirSync(join(root, 'lib'), { recursive: true }) as string[])
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join('lib', file).split('\\').join('/'))
    .sort()
}

function source (file: string): string {
  return readFileSync(join(root, file), 'utf8')
}

/** The lib/ modules `file` imports (relative imports, types included). */
function localImports (file: string): string[] {
  return [...source(file).matchAll(/from '(\.{1,2}\/[^']+)'/g)]
    .map((m) => relative(root, join(root, dirname(file), `${m[1] as string}.ts`)).split('\\').join('/'))
    .filter((target) => target.startsWith('lib/'))
}

/** Whether `file`, or a lib/ module it imports, names fastify. */
function touchesFastify (file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false
  seen.add(file)
  if (/from 'fastify(?:-plugin)?'|declare module 'fastify'/.test(source(file))) return true
  return localImports(file).some((target) => touchesFastify(target, seen))
}

/** The modules docs/architecture.md's table places in a layer. */
function layer (name: 'core' | 'glue' | 'client'): string[] {
  const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')
  const out: string[] = []
  for (const line of doc.split('\n')) {
    if (!line.startsWith(`| ${name}:`)) continue
    for (const match of line.matchAll(/`(lib\/[\w/-]+\.ts)`/g)) out.push(match[1] as string)
  }
  return out
}

test('docs/architecture.md places every lib/ module in one layer', async (t) => {
  t.same([...layer('core'), ...layer('glue'), ...layer('client')].sort(), modules(), 'each module once, none missing')
})

test('the pure core and the client import no fastify, not even its types, nor a module that does', async (t) => {
  for (const file of [...layer('core'), ...layer('client')]) t.notOk(touchesFastify(file), file)
})

test('the pure core is at least half of the plugin (lib/ but the client), and lib/index.ts at most 120 lines', async (t) => {
  const lines = (file: string): number => source(file).split('\n').length - 1
  const sum = (files: string[]): number => files.reduce((total, file) => total + lines(file), 0)
  const core = sum(layer('core'))
  const plugin = core + sum(layer('glue'))
  t.ok(core * 2 >= plugin, `core ${core} of ${plugin} lines`)
  t.ok(lines('lib/index.ts') <= 120, `lib/index.ts: ${lines('lib/index.ts')} lines`)
})
