// fastify-digest-fields: HTTP Digest Fields (RFC 9530) for Fastify.
// The entry wires the pieces: options validated once, decorators, an onRoute
// hook that reads the `digest` route option and attaches the route-level
// hooks of the response and request concerns. Like @fastify/compress, it
// reaches only the routes declared after it is loaded (docs/design.md, "Registration order").
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyPluginCallback } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../types/index'
import { normalizeOptions, normalizeRouteOptions, type DigestParams } from './plugin/plugin-options'
import { placeHooks, type RouteHookInstaller } from './plugin/route-hooks'
import { setReprDigest, setUnencodedDigest } from './plugin/response/declared'
import { installResponseDigests } from './plugin/response/hooks'
import { installRequestVerification } from './plugin/request/body-check'
import { kDeclared, kDeclaredUnencoded, kRouteParams } from './plugin/symbols'
import { errors, FST_DIGEST_ALREADY_REGISTERED } from './core/errors'
import { ALGORITHMS, isDigestAlgorithm, computeDigest, createDigester } from './core/algorithms'
import { parseDigestField, serializeDigestField, parseWantField, serializeWantField, parseLegacyDigest } from './core/fields'
import { selectAlgorithms } from './core/negotiation'
import { verifyDigests } from './core/compare'
import { staticHeaders } from './plugin/response/static-files'

const fastifyDigestFields: FastifyPluginCallback<FastifyDigestFieldsOptions> = function fastifyDigestFields (fastify, opts, done) {
  // avvio does not catch what a callback plugin throws (avvio 9.3.1
  // lib/plugin.js:138 calls it bare): an error thrown here would be uncaught
  // instead of failing register().
  try {
    install(fastify as FastifyInstance, opts)
  } catch (err) {
    done(err as Error)
    return
  }
  done()
}

function install (fastify: FastifyInstance, opts: FastifyDigestFieldsOptions): void {
  // Registered again in this scope or a child one: the decorators are there
  // (a child inherits them). Sibling scopes each have their own.
  if (fastify.hasReplyDecorator(kDeclared)) throw new FST_DIGEST_ALREADY_REGISTERED()
  const params = normalizeOptions(opts)

  fastify.decorateReply(kDeclared, null)
  fastify.decorateReply(kDeclaredUnencoded, null)
  fastify.decorateReply('setReprDigest', setReprDigest)
  fastify.decorateReply('setUnencodedDigest', setUnencodedDigest)

  // In this order on each route: the response stages, then the request
  // verifier's hooks (lib/plugin/route-hooks.ts says where each goes).
  const installers: Array<RouteHookInstaller<DigestParams>> = [
    installResponseDigests(fastify, params),
    installRequestVerification(fastify)
  ]

  fastify.addHook('onRoute', function digestOnRoute (routeOptions) {
    const method = Array.isArray(routeOptions.method) ? routeOptions.method.join(',') : routeOptions.method
    const routeParams = normalizeRouteOptions(params, routeOptions.digest, method, routeOptions.url)
    if (routeParams === null) return
    routeOptions.config = Object.assign({}, routeOptions.config, { [kRouteParams]: routeParams })
    placeHooks(routeOptions, [...installers.map((installer) => installer.onRoute(routeOptions, routeParams))])
  })
}

// fastify 5.12.8 is the first to write a piped stream's trailers: before it,
// lib/reply.js piped the payload with `end: true` and wrote the trailers on
// 'end', after the response had ended, so they were lost (5.12.8:
// lib/reply.js:860 and :897 end the response itself, after sendTrailer).
// test/plugin/fastify-floor.test.ts shows it on 5.12.7.
const plugin = fp(fastifyDigestFields, { fastify: '^5.12.8', name: 'fastify-digest-fields' })

const exported = Object.assign(plugin, {
  default: plugin,
  fastifyDigestFields: plugin,
  errors,
  ALGORITHMS,
  isDigestAlgorithm,
  computeDigest,
  createDigester,
  parseDigestField,
  serializeDigestField,
  parseWantField,
  serializeWantField,
  parseLegacyDigest,
  selectAlgorithms,
  verifyDigests,
  staticHeaders
})

// Static hints for Node's CommonJS named-export detection (cjs-module-lexer),
// so that `import digestFields, { fastifyDigestFields, computeDigest } from
// 'fastify-digest-fields'` works from ESM. `export =` below replaces
// module.exports with `exported`, which carries the same properties.
module.exports.default = exported
module.exports.fastifyDigestFields = exported
module.exports.errors = errors
module.exports.ALGORITHMS = ALGORITHMS
module.exports.isDigestAlgorithm = isDigestAlgorithm
module.exports.computeDigest = computeDigest
module.exports.createDigester = createDigester
module.exports.parseDigestField = parseDigestField
module.exports.serializeDigestField = serializeDigestField
module.exports.parseWantField = parseWantField
module.exports.serializeWantField = serializeWantField
module.exports.parseLegacyDigest = parseLegacyDigest
module.exports.selectAlgorithms = selectAlgorithms
module.exports.verifyDigests = verifyDigests
module.exports.staticHeaders = staticHeaders
export = exported
