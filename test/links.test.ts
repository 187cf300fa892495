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
