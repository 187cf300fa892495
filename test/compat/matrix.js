'use strict'
// The compatibility matrix: every cell of the README's table (between
// <!-- compat:start --> and <!-- compat:end -->, rendered by renderTable and
// checked by test/package/compat-table.test.ts) is run by test/compat/run.js.
//
// Other majors of a package are devDependencies under npm aliases (package.json)
// and reach the tests through test/compat/aliases.cjs. Other Node.js majors
// come from the registry's node-<platform>-<arch> packages (npm's cache keeps
// them), pinned here.

/** Node.js releases run besides the one running npm (Node.js 20 on this project's machines). */
const nodes = ['20', '22.23.3', '24.21.0', '26.10.0']

/**
 * The packages of the table: the version the suite runs on (its
 * devDependency), then the other versions by alias, each with the Node.js
 * majors it runs on when not all of them (its engines).
 */
const packages = {
  fastify: { current: '^5.12.8 || ^6.0.0-alpha.4', tested: '^5.12.8', aliases: { 6: 'fastify6' }, nodes: { 6: ['24', '26'] }, prerelease: { 6: '6.0.0-alpha.4' } },
  '@fastify/compress': { current: '9.x', aliases: { 8: 'compress8' } },
  '@fastify/static': { current: '10.x', aliases: { 9: 'static9', 8: 'static8' } },
  '@fastify/multipart': { current: '10.x', aliases: { 9: 'multipart9' } },
  undici: { current: '7.x', aliases: { 8: 'undici8' }, nodes: { 8: ['22', '24', '26'] } }
}

/** The integration test files: the ones that run the other packages for real. */
const integration = [
  'test/plugin/response/compress.test.ts',
  'test/plugin/response/conditional.test.ts',
  'test/plugin/request/request-compress.test.ts',
  'test/plugin/request/request-http2.test.ts',
  'test/plugin/request/request-server.test.ts',
  'test/plugin/request/request-edges.test.ts',
  'test/plugin/response/streams.test.ts',
  'test/plugin/response/static.test.ts',
  'test/plugin/response/file-digests.test.ts',
  'test/plugin/hardening-limits.test.ts',
  'test/plugin/request/request-readers.test.ts',
  'test/plugin/request/request-aborts.test.ts',
  'test/plugin/request/request-query.test.ts',
  'test/plugin/response/signing-hook.test.ts',
  'test/package/examples.test.ts'
]

/** The canaries of what the plugin relies on in upstream internals (docs/design.md): run in every cell. */
const upstream = [
  'test/upstream/node-request-stream.test.ts',
  'test/upstream/fastify-request.test.ts',
  'test/upstream/fastify-reply.test.ts'
]

/** Every client test: the interceptor against undici, each major of it. */
const client = [
  'test/client/client-check.test.ts',
  'test/client/client-decompress.test.ts',
  'test/client/client-reencoded.test.ts',
  'test/client/client-foreign.test.ts',
  'test/client/client-form-data.test.ts',
  'test/client/client-options.test.ts',
  'test/client/client-plugin.test.ts',
  'test/client/client-request-body.test.ts',
  'test/client/client-shared-controller.test.ts',
  'test/client/client-unencoded.test.ts'
]

/**
 * Runs on each Node.js release (`nodes`: only those majors): `latest` is the
 * whole suite with every package at its newest major there (undici 8 where
 * its engines allow); the others put older majors in place of the current
 * ones and run the upstream canaries, the integration files and the client's;
 * `fastify 6` runs the canaries and the integration files on the prerelease,
 * with the current plugins.
 */
const combos = [
  { name: 'latest', use: {}, files: 'all', nodes: ['20'] },
  { name: 'latest', use: { undici: '8' }, files: 'all', nodes: ['22', '24', '26'] },
  { name: 'older', use: { '@fastify/compress': '8', '@fastify/static': '9', '@fastify/multipart': '9', undici: '7' }, files: [...upstream, ...integration, ...client] },
  { name: 'oldest static', use: { '@fastify/static': '8' }, files: [...upstream, 'test/plugin/response/static.test.ts', 'test/plugin/response/file-digests.test.ts', 'test/package/examples.test.ts'] },
  { name: 'fastify 6', use: { fastify: '6', undici: '8' }, files: [...upstream, ...integration], nodes: ['24', '26'] }
]

/** What differs by package and major, under the table. */
const notes = [
  'fastify 5.12.8 or later: earlier 5.x releases lose a piped stream\'s trailers (the plugin refuses them at registration).',
  'fastify 6 is a prerelease (6.0.0-alpha.4, Node.js >= 24): the plugin declares `^6.0.0-alpha.4` and runs its integration tests and the examples on it with @fastify/compress 9, @fastify/static 10 and @fastify/multipart 10 (which declare fastify `5.x`: they load on a 6 prerelease only). 6.0.0-alpha.4 loses a piped stream\'s trailers (the fix, fastify/fastify#6953, is in 5.12.8): set `trailers: false` there, and the tests skip those trailers; so the client\'s tests, which ask for trailers, do not run there. It also refuses an HTTP/2 `QUERY` body without `Content-Length` (fastify/fastify#6929).',
  '@fastify/compress 8 also gzips 206 responses: `Content-Digest` is of the bytes sent, and strict mode omits `Repr-Digest` there.',
  '@fastify/static 8 and 9 pass `setHeaders` the raw response, 10 the reply: `staticHeaders` takes either.',
  '@fastify/multipart 9 fails a read with `ERR_STREAM_PREMATURE_CLOSE` instead of the plugin\'s error: the reply is still the 400 problem, and a handler that rethrows it is logged with that 400 (the plugin gives an error without a status of its own, thrown for a failed or cut body, the 4xx of the failure).',
  'undici is the client\'s (`fastify-digest-fields/client`, an optional peer, `^7.30.2 || ^8.13.1`): 8 needs Node.js >= 22.19, 7 Node.js >= 20.18.1. undici 7 drops HTTP/2 response trailers; the client reads them back. undici 8\'s `request` takes only its own `FormData` (the client serializes either).',
  'On Node.js 20, npm warns EBADENGINE for cookie 2 (fastify\'s light-my-request), content-disposition 3 (@fastify/static 10), undici 8 and fastify 6, which declare newer Node.js releases; the tests pass, and undici 8 and fastify 6 are not loaded there.'
]

function major (version) {
  return version.split('.')[0]
}

/** The Node.js majors `version` of `name` runs on. */
function nodesOf (name, version) {
  return packages[name].nodes?.[version] ?? nodes.map(major)
}

/** The README's block between the compat markers: the supported ranges, the tested versions, the notes. */
function renderTable () {
  const rows = []
  for (const [name, { current, tested, aliases, prerelease }] of Object.entries(packages)) {
    rows.push(`| ${name} | \`${tested ?? current}\` | ${nodes.map(major).join(', ')} |`)
    for (const version of Object.keys(aliases).sort((a, b) => Number(b) - Number(a))) {
      const shown = prerelease?.[version] === undefined ? `\`${version}.x\`` : `\`${prerelease[version]}\` (prerelease)`
      rows.push(`| ${name} | ${shown} | ${nodesOf(name, version).join(', ')} |`)
    }
  }
  return [
    '| plugin | fastify | Node.js |',
    '|---|---|---|',
    // A `|` inside a table cell is escaped, code spans included (GitHub Flavored Markdown, tables).
    `| \`0.x\` | \`${packages.fastify.current.replaceAll('|', '\\|')}\` | \`>= ${major(nodes[0])}\` |`,
    '',
    `CI (\`.ci/run\`) runs \`npm test\`, the whole suite with coverage, on Node.js ${major(nodes[0])}, the oldest supported, and`,
    'then every cell of this table (`npm run test:compat`): the whole suite with the newest majors on each Node.js line,',
    'and the canaries of upstream internals (`test/upstream/`), the integration tests and the examples (and the client\'s',
    'tests, but on fastify 6) with the other versions:',
    '',
    '| package | version tested | on Node.js |',
    '|---|---|---|',
    ...rows,
    '',
    ...notes.map((note) => `- ${note}`)
  ].join('\n')
}

module.exports = { nodes, packages, upstream, integration, client, combos, notes, renderTable, major, nodesOf }
