// (placeholder, being written) Request verification.
import type { FastifyInstance } from 'fastify'
import type { DigestParams } from './options'
import type { RouteHookInstaller } from './index'

export function installRequestVerification (_fastify: FastifyInstance, _params: DigestParams): RouteHookInstaller {
  return { onRoute () {} }
}
