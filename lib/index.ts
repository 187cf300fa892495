// fastify-digest-fields: HTTP Digest Fields (RFC 9530) for Fastify. Options, decorators, and one
// onRoute hook placing the response and request hooks on the routes declared after it
// (docs/design.md, "Registration order").
import fp from 'fastify-plugin'
import type { FastifyPluginCallback } from 'fastify'
import type { FastifyDigestFieldsOptions } from '../types/index'
import type Public = require('../types/index')
import { normalizeOptions, normalizeRouteOptions } from './plugin/plugin-options'
import { placeHooks } from './plugin/route-hooks'
import { setReprDigest, setUnencodedDigest } from './plugin/response/declared'
import { installResponseDigests } from './plugin/response/hooks'
import { installRequestVerification } from './plugin/request/body-check'
import { kDeclared, kRouteParams } from './plugin/symbols'
import { errors, FST_DIGEST_ALREADY_REGISTERED } from './core/errors'
import { ALGORITHMS, isDigestAlgorithm, computeDigest, createDigester } from './core/algorithms'
import {
  parseDigestField, serializeDigestField, parseWantField, serializeWantField, parseLegacyDigest
} from './core/fields'
import { selectAlgorithms } from './core/negotiation'
import { verifyDigests } from './core/compare'
import { staticHeaders } from './plugin/response/static-files'

const fastifyDigestFields: FastifyPluginCallback<FastifyDigestFieldsOptions> = function fastifyDigestFields (
  fastify, opts, done
) {
  // avvio 9.3.1 lib/plugin.js:138 calls a callback plugin bare: a throw would be uncaught.
  try {
    // Registered again in this scope or a child one, which inherits the decorators.
    if (fastify.hasReplyDecorator(kDeclared)) throw new FST_DIGEST_ALREADY_REGISTERED()
    const params = normalizeOptions(opts)
    fastify.decorateReply(kDeclared, null)
    fastify.decorateReply('setReprDigest', setReprDigest)
    fastify.decorateReply('setUnencodedDigest', setUnencodedDigest)
    // In this order on each route: the response stages, then the request verifier's hooks.
    const installers = [installResponseDigests(fastify, params), installRequestVerification(fastify)]
    fastify.addHook('onRoute', function digestOnRoute (routeOptions) {
      const routeParams = normalizeRouteOptions(params, routeOptions)
      if (routeParams === null) return
      routeOptions.config = Object.assign({}, routeOptions.config, { [kRouteParams]: routeParams })
      placeHooks(routeOptions, installers.map((installer) => installer.onRoute(routeOptions, routeParams)))
    })
  } catch (err) {
    return done(err as Error)
  }
  done()
}

// fastify 5.12.8 is the first to write a piped stream's trailers (lib/reply.js:860 and :897 end
// the response after sendTrailer); test/plugin/fastify-floor.test.ts shows them lost on 5.12.7.
// fastify 6: its prereleases from alpha.4, tested in the compat matrix (README, "Compatibility").
const plugin = fp(fastifyDigestFields, { fastify: '^5.12.8 || ^6.0.0-alpha.4', name: 'fastify-digest-fields' })

// module.exports is the plugin, carrying the named exports; written one by one as static hints
// for cjs-module-lexer, so that ESM named imports work. Its type is the hand-written one.
module.exports = plugin
module.exports.default = plugin
module.exports.fastifyDigestFields = plugin
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
const exported = plugin as unknown as typeof Public
export = exported
