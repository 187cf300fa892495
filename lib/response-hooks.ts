// (placeholder, being written) Response digests.
import type { FastifyInstance } from 'fastify'
import type { DigestParams } from './options'
import type { RouteHookInstaller } from './index'

export function installResponseDigests (_fastify: FastifyInstance, _params: DigestParams): RouteHookInstaller {
  return { onRoute () {} }
}
