// The documents' relative links name files that are in the repository (the
// package and its docs may not point outside it). Links to other sites are
// not fetched here. The README is also the package's page on npm, where a
// relative link leads nowhere (the package names no repository): it names
// files of the package as plain paths, and those files are in the tarball.
import { test } from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'

const root = join(__dirname, '..', '..')

/** The Markdown documents of the repository: the top level and docs/. */
function documents (): string[] {
  const top = readdirSync(root).filter((name) => name.endsWith('.md'))
  const docs = existsSync(join(root, 'docs')) ? readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name)) : []
  return [...top, ...docs]
}

/** The relative targets of links and images (inline, or reference definitions), fragments and titles dropped. */
function relativeLinks (markdown: string): string[] {
  const out: string[] = []
  for (const match of markdown.matchAll(/\]\(\s*([^)\s]+)(?:\s+"[^"]*")?\s*\)|^ {0,3}\[[^\]]+\]:\s*<?([^>\s]+)/gm)) {
    const target = (match[1] ?? match[2]) as string
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue
    out.push(decodeURIComponent(target.split('#')[0] as string))
  }
  return out
}

test('relativeLinks: what counts as a relative link', async (t) => {
  t.same(relativeLinks('[a](docs/benchmarks.md) [b](https://x.test/y.md) [c](#streams) [d](docs/design.md#hooks "t") ![e](img/a.png) [f](mailto:a@b.test)\n[g]: examples/x.mjs\n[h]: #top\n[i]: https://x.test/'),
    ['docs/benchmarks.md', 'docs/design.md', 'img/a.png', 'examples/x.mjs'])
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
  t.same(namedFiles('see DESIGN.md §2, docs/design.md, lib/source-tap.ts and fastify lib/reply.js, test/compat/run.js, node_modules/x/docs/a.md, fastify docs/Reference/Server.md, lib/plugin/request/phase.ts'),
    ['DESIGN.md', 'docs/design.md', 'lib/source-tap.ts', 'test/compat/run.js', 'lib/plugin/request/phase.ts'])
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

const readme = readFileSync(join(root, 'README.md'), 'utf8')

test('the README has no relative link but to a #fragment (it is the npm page too)', async (t) => {
  t.same(relativeLinks(readme), [])
})

/** Folders of the repository named in a text: `docs/`, `examples/`. */
function namedFolders (text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w/.-])((?:docs|examples|types|dist|client)\/)(?![\w.-])/g)].map((match) => match[1] as string))]
}

test('namedFolders: what counts as a folder of the repository', async (t) => {
  t.same(namedFolders('in `examples/` and docs/, not docs/design.md nor node_modules/x/examples/ nor a/dist/'), ['examples/', 'docs/'])
})

/**
 * The files `npm pack` puts in the tarball, by package.json's `files`
 * (without running prepack: dist/ as it is, which the README names nothing of).
 */
function packedFiles (): Promise<Set<string>> {
  const cli = process.env.npm_execpath
  const [command, args] = cli !== undefined && /npm-cli\.js$/.test(cli)
    ? [process.execPath, [cli]]
    : [process.platform === 'win32' ? 'npm.cmd' : 'npm', []]
  return new Promise((resolve, reject) => {
    execFile(command, [...args, 'pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, shell: process.platform === 'win32', timeout: 60_000 }, (err, stdout) => {
      if (err !== null) reject(err)
      else resolve(new Set((JSON.parse(stdout) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((file) => file.path)))
    })
  })
}

test('every file and folder of the repository the README names is in the package', async (t) => {
  const packed = await packedFiles()
  t.ok(packed.has('README.md') && packed.has('package.json'), 'the list of npm pack')
  const files = namedFiles(readme)
  t.ok(files.length >= 10, `the README names ${files.length} files`)
  for (const name of files) t.ok(packed.has(name), name)
  const folders = namedFolders(readme)
  t.ok(folders.includes('examples/') && folders.includes('docs/'), 'the README names examples/ and docs/')
  for (const folder of folders) {
    const inside = [...packed].filter((file) => file.startsWith(folder))
    t.ok(inside.length > 0, folder)
    // A folder named is shipped whole.
    const all = readdirSync(join(root, folder), { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile())
    t.equal(inside.length, all.length, `${folder}: all ${all.length} files`)
  }
})

// The package ships docs/ (package.json "files"): a shipped document links only to what ships, and one that names
// files of the source repository (lib/, test/, benchmarks/) says so.
test('the shipped docs link only to shipped files, and say which paths are the source repository\'s', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[] }
  const shipped = (path: string): boolean => ['README.md', 'LICENSE', 'package.json', ...pkg.files].some((f) => path === f || path.startsWith(`${f}/`))
  t.ok(pkg.files.includes('docs'), 'docs/ ships')
  for (const doc of documents().filter((d) => d.startsWith('docs'))) {
    const text = readFileSync(join(root, doc), 'utf8')
    for (const target of relativeLinks(text)) t.ok(shipped(join(dirname(doc), target)), `${doc}: ${target} ships`)
    const repositoryOnly = namedFiles(text).filter((name) => !shipped(name))
    if (repositoryOnly.length > 0) t.match(text, /Paths under `lib\/`, `test\/` and `benchmarks\/` name files of the source repository/, `${doc} names ${repositoryOnly[0] as string}: it says so`)
  }
})
