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
 * devDependency), then the other majors by alias.
 */
const packages = {
  fastify: { current: '^5.12.8', aliases: {} },
  '@fastify/compress': { current: '9.x', aliases: { 8: 'compress8' } },
  '@fastify/static': { current: '10.x', aliases: { 9: 'static9', 8: 'static8' } },
  '@fastify/multipart': { current: '10.x', aliases: { 9: 'multipart9' } },
  undici: { current: '7.x', aliases: {} }
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
  'test/client/client-plugin.test.ts',
  'test/client/client-foreign.test.ts',
  'test/client/client-request-body.test.ts',
  'test/client/client-unencoded.test.ts',
  'test/plugin/response/signing-hook.test.ts',
  'test/package/examples.test.ts'
]

/**
 * Runs on each Node.js release: `latest` is the whole suite with every
 * package at the major the suite runs on; the others put older majors in
 * place of the current ones and run the integration files.
 */
const combos = [
  { name: 'latest', use: {}, files: 'all' },
  { name: 'older', use: { '@fastify/compress': '8', '@fastify/static': '9', '@fastify/multipart': '9' }, files: integration },
  { name: 'oldest static', use: { '@fastify/static': '8' }, files: ['test/plugin/response/static.test.ts', 'test/plugin/response/file-digests.test.ts', 'test/package/examples.test.ts'] }
]

/** What differs by package and major, under the table. */
const notes = [
  'fastify 5.12.8 or later: earlier 5.x releases lose a piped stream\'s trailers (the plugin refuses them at registration).',
  '@fastify/compress 8 also gzips 206 responses: `Content-Digest` is of the bytes sent, and strict mode omits `Repr-Digest` there.',
  '@fastify/static 8 and 9 pass `setHeaders` the raw response, 10 the reply: `staticHeaders` takes either.',
  '@fastify/multipart 9 fails a read with `ERR_STREAM_PREMATURE_CLOSE` instead of the plugin\'s error: the reply is still the 400 problem, and a handler that rethrows it is logged with that 400 (the plugin gives an error without a status of its own, thrown for a failed or cut body, the 4xx of the failure).',
  'undici 7.x is the client\'s (`fastify-digest-fields/client`, an optional peer): Node.js >= 20.18.1 (undici 8 needs Node.js 22). It drops HTTP/2 response trailers; the client reads them back.',
  'On Node.js 20, npm warns EBADENGINE for cookie 2 (fastify\'s light-my-request) and content-disposition 3 (@fastify/static 10), which declare Node.js >= 22; the tests pass.'
]

function major (version) {
  return version.split('.')[0]
}

/** The README's block between the compat markers: the supported ranges, the tested majors, the notes. */
function renderTable () {
  const nodeMajors = nodes.map(major)
  const rows = []
  for (const [name, { current, aliases }] of Object.entries(packages)) {
    const shown = [current, ...Object.keys(aliases).sort((a, b) => Number(b) - Number(a)).map((m) => `${m}.x`)]
    rows.push(`| ${name} | ${shown.map((v) => `\`${v}\``).join(', ')} | ${nodeMajors.join(', ')} |`)
  }
  return [
    '| plugin | fastify | Node.js |',
    '|---|---|---|',
    `| \`0.x\` | \`${packages.fastify.current}\` | \`>= ${nodeMajors[0]}\` |`,
    '',
    'Every cell of this table runs the integration tests and the examples (`npm run test:compat`):',
    '',
    '| package | majors tested | on Node.js |',
    '|---|---|---|',
    ...rows,
    '',
    ...notes.map((note) => `- ${note}`)
  ].join('\n')
}

module.exports = { nodes, packages, integration, combos, notes, renderTable, major }
