// The documents' relative links name files that are in the repository (the
// package and its docs may not point outside it). Links to other sites are
// not fetched here.
import { test } from 'tap'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'

const root = join(__dirname, '..')

/** The Markdown documents of the repository: the top level and docs/. */
function documents (): string[] {
  const top = readdirSync(root).filter((name) => name.endsWith('.md'))
  const docs = existsSync(join(root, 'docs')) ? readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name)) : []
  return [...top, ...docs]
}

/** The relative targets of inline links and images, fragments and titles dropped. */
function relativeLinks (markdown: string): string[] {
  const out: string[] = []
  for (const match of markdown.matchAll(/\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
    const target = match[1] as string
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue
    out.push(decodeURIComponent(target.split('#')[0] as string))
  }
  return out
}

test('relativeLinks: what counts as a relative link', async (t) => {
  t.same(relativeLinks('[a](docs/benchmarks.md) [b](https://x.test/y.md) [c](#streams) [d](docs/design.md#hooks "t") ![e](img/a.png) [f](mailto:a@b.test)'),
    ['docs/benchmarks.md', 'docs/design.md', 'img/a.png'])
})

test('every relative link in the README and the docs names a file of the repository', async (t) => {
  const docs = documents()
  t.ok(docs.includes('README.md'))
  for (const doc of docs) {
    for (const target of relativeLinks(readFileSync(join(root, doc), 'utf8'))) {
      t.ok(existsSync(join(root, dirname(doc), target)), `${doc}: ${target}`)
    }
  }
})

/**
 * Files of this repository named in a text: docs and top-level Markdown, our
 * own sources, tests, benchmarks, examples. A path right after "fastify " is
 * fastify's own (its docs/Reference/*.md, types/*.d.ts), not ours.
 */
function namedFiles (text: string): string[] {
  const out = new Set<string>()
  const pattern = /(?<![\w/.-])(?<!fastify )((?:docs|examples|benchmarks|types)\/[\w/.-]+\.(?:md|js|mjs|cjs|ts)|lib\/[\w/-]+\.ts|test\/[\w/-]+\.(?:ts|js|cjs|mjs)|[A-Z][A-Z0-9_-]*\.md)\b/g
  for (const match of text.matchAll(pattern)) out.add(match[1] as string)
  return [...out]
}

test('namedFiles: what counts as a file of the repository', async (t) => {
  t.same(namedFiles('see DESIGN.md §2, docs/design.md, lib/source-tap.ts and fastify lib/reply.js, test/compat/run.js, node_modules/x/docs/a.md, fastify docs/Reference/Server.md, lib/request/state.ts'),
    ['DESIGN.md', 'docs/design.md', 'lib/source-tap.ts', 'test/compat/run.js', 'lib/request/state.ts'])
})

test('every file of the repository named in the code, the types, the README or the docs exists', async (t) => {
  const sources = [
    ...documents(),
    // lib/ with its folders (lib/request/).
    ...['lib', 'types', 'examples', 'benchmarks'].flatMap((dir) => readdirSync(join(root, dir), { recursive: dir === 'lib', encoding: 'utf8' }).filter((name) => /\.(ts|js|mjs|cjs)$/.test(name)).map((name) => join(dir, name)))
  ]
  for (const source of sources) {
    for (const name of namedFiles(readFileSync(join(root, source), 'utf8'))) {
      t.ok(existsSync(join(root, name)), `${source}: ${name}`)
    }
  }
})
