// Prints, as JSON, the version of each package named on the command line as
// our code loads it (under test/compat/aliases.cjs when NODE_OPTIONS preloads
// it): through CommonJS require.resolve and through an ES module import's
// resolution. test/compat/run.js refuses a cell whose majors are not the
// intended ones.
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)

/** The version in the package.json above a resolved entry file. */
function versionAbove (file) {
  let dir = dirname(file)
  for (;;) {
    const candidate = join(dir, 'package.json')
    try {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8'))
      if (pkg.version) return pkg.version
    } catch {}
    dir = dirname(dir)
  }
}

const out = {}
for (const name of process.argv.slice(2)) {
  const cjs = versionAbove(require.resolve(name))
  const esm = versionAbove(fileURLToPath(import.meta.resolve(name)))
  out[name] = { version: cjs, cjs: cjs.split('.')[0], esm: esm.split('.')[0] }
}
console.log(JSON.stringify(out))
