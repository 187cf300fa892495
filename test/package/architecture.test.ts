// docs/architecture.md as a test. The layers are folders: lib/core/ (pure
// RFC code: no fastify, not even its types, nor through a module that does),
// lib/plugin/ (the fastify hooks), lib/client/ (the undici client, no
// fastify either); only the entry lib/index.ts sits directly in lib/. Every
// module is named in docs/architecture.md, and no two share a name.
import { test } from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'

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

test('the layers are folders, and only the entry is directly in lib/', async (t) => {
  const outside = modules().filter((file) => !/^lib\/(core|plugin|client)\//.test(file))
  t.same(outside, ['lib/index.ts'])
})

test('the pure core and the client import no fastify, not even its types, nor a module that does', async (t) => {
  const pure = modules().filter((file) => /^lib\/(core|client)\//.test(file))
  t.ok(pure.length > 10)
  for (const file of pure) t.notOk(touchesFastify(file), file)
})

test('the client reaches the plugin through no import', async (t) => {
  for (const file of modules().filter((f) => f.startsWith('lib/client/'))) {
    for (const target of localImports(file)) t.notOk(target.startsWith('lib/plugin/') || target === 'lib/index.ts', `${file} → ${target}`)
  }
})

test('each module is named for what it holds: no two share a name, and docs/architecture.md names every one', async (t) => {
  const names = modules().map((file) => basename(file)).filter((name) => name !== 'index.ts')
  t.same(names.filter((name, i) => names.indexOf(name) !== i), [], 'no repeated module names')
  const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8')
  for (const file of modules()) t.ok(doc.includes(`\`${file}\``), `docs/architecture.md names ${file}`)
})

test('lib/index.ts stays small', async (t) => {
  const lines = source('lib/index.ts').split('\n').length - 1
  t.ok(lines <= 120, `lib/index.ts: ${lines} lines`)
})
