// fastify-digest-fields/client: RFC 9530 digest fields for undici 7 and 8 clients; loads neither fastify nor undici.
export { clientErrors } from '../core/errors'
export { digestInterceptor } from './interceptor'
export { digestBody, digestHeaders } from './request-digest'
