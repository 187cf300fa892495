// The major of a package as this process loads it: the compatibility matrix
// (test/compat/run.js) points `@fastify/static`, `@fastify/compress` and
// `@fastify/multipart` at other majors installed under npm aliases, and the
// few assertions that differ between majors read the one in use here.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** The major version of `name` as resolved from the tests. */
export function loadedMajor (name: string): number {
  let dir = dirname(require.resolve(name))
  for (;;) {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string, version?: string }
    // The package's own package.json, not a nested one without a version.
    if (typeof pkg.version === 'string' && typeof pkg.name === 'string') return Number(pkg.version.split('.')[0])
    dir = dirname(dir)
  }
}
