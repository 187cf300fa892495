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

/**
 * Why the fastify in use sends a piped stream's `res.end()` before its trailers over a real socket, or false.
 * fastify 6.0.0-alpha.4 lib/reply.js:843 sends them on the source's 'end' (sendStreamTrailer, :950-953), a
 * listener that runs before pipe's own (:890, `payload.pipe(res)`, no `{ end: false }`) and whose trailer
 * callbacks answer on a later tick (sendTrailer, :936): the response ends, `Trailer` announced, none written.
 * fastify 5.12.8 has the fix (fastify/fastify#6953: pipe without end, trailers from the eos listener).
 */
export const pipedTrailersLost: string | false = loadedMajor('fastify') === 6
  ? 'fastify 6.0.0-alpha.4 ends a piped stream before its trailers (lib/reply.js:843, :890); fix: fastify/fastify#6953'
  : false

/**
 * Why the fastify in use refuses an HTTP/2 QUERY whose body comes without Content-Length, or false: fastify
 * 6.0.0-alpha.4 lib/handle-request.js:55-61 (isEmptyBody reads the framing fields HTTP/2 need not send) answers
 * 400 FST_ERR_ROUTE_MISSING_CONTENT before any hook; fastify/fastify#6929 removes the check.
 */
export const h2QueryRefused: string | false = loadedMajor('fastify') === 6
  ? 'fastify 6.0.0-alpha.4 refuses an HTTP/2 QUERY body without Content-Length (lib/handle-request.js:55-61); fix: fastify/fastify#6929'
  : false
