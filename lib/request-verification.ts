// (placeholder, being written) Request verification.
import type { FastifyInstance } from 'fastify'
import type { DigestParams, RouteHookInstaller } from './options'

export function installRequestVerification (_fastify: FastifyInstance, _params: DigestParams): RouteHookInstaller {
  return { onRoute () {} }
}
