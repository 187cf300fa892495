// The built package, loaded as a user would: require() and ESM import.
// `npm test` builds dist/ first.
import { test } from 'tap'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import Fastify from 'fastify'

const root = join(__dirname, '..', '..')

test('CommonJS: require() gives the plugin, .default and .fastifyDigestFields', async (t) => {
  const pkg = require(root)
  t.equal(typeof pkg, 'function')
  t.equal(pkg.default, pkg)
  t.equal(pkg.fastifyDigestFields, pkg)
  for (const name of ['computeDigest', 'createDigester', 'parseDigestField', 'serializeDigestField', 'parseWantField',
    'serializeWantField', 'parseLegacyDigest', 'selectAlgorithms', 'verifyDigests', 'isDigestAlgorithm']) {
    t.equal(typeof pkg[name], 'function', name)
  }
  t.equal(pkg.errors.FST_DIGEST_MISMATCH.name, 'FastifyError')
  t.equal(pkg.computeDigest('sha-256', '').toString('base64'), '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=')
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(pkg, { contentDigest: true })
  app.get('/', async () => 'x')
  t.match((await app.inject('/')).headers['content-digest'], /^sha-256=:/)
})

test('ESM: default and named imports resolve to the same plugin', async (t) => {
  const entry = pathToFileURL(join(root, 'dist', 'index.js')).href
  const script = `
    import digestFields, { fastifyDigestFields, computeDigest, errors } from '${entry}'
    import Fastify from 'fastify'
    const app = Fastify()
    await app.register(fastifyDigestFields, { reprDigest: 'sha-512' })
    app.get('/', async () => 'esm')
    const res = await app.inject('/')
    console.log(JSON.stringify({
      same: digestFields === fastifyDigestFields,
      digest: typeof computeDigest,
      code: typeof errors.FST_DIGEST_MISSING,
      field: res.headers['repr-digest']
    }))
  `
  // The built entry, imported from ESM: named exports come from Node's
  // static analysis of the CommonJS module.
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' }
  }).toString()
  const result = JSON.parse(out)
  t.same(result, { same: true, digest: 'function', code: 'function', field: result.field })
  t.match(result.field, /^sha-512=:/)
})

test('fastify-digest-fields/client: require() and ESM named imports, through the package exports', async (t) => {
  const client = require('fastify-digest-fields/client')
  t.equal(typeof client.digestInterceptor, 'function')
  t.equal(typeof client.digestHeaders, 'function')
  t.equal(typeof client.digestBody, 'function')
  t.equal(client.clientErrors.FST_DIGEST_RESPONSE_MISMATCH.name, 'FastifyError')
  t.equal(require.resolve('fastify-digest-fields/client'), join(root, 'dist', 'client', 'index.js'))
  const script = `
    import { digestInterceptor, digestHeaders, digestBody, clientErrors } from 'fastify-digest-fields/client'
    console.log(JSON.stringify([typeof digestInterceptor, digestHeaders('').constructor.name, typeof digestBody, Object.keys(clientErrors).length]))
  `
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' })
  t.same(JSON.parse(out), ['function', 'Object', 'function', 8])
})
