// fastify-digest-fields/client: RFC 9530 digest fields for undici 7 clients; loads neither fastify nor undici.
import { clientErrors } from '../core/errors'
import { digestInterceptor } from './interceptor'
import { digestBody, digestHeaders } from './request-digest'

const exported = { digestInterceptor, digestHeaders, digestBody, clientErrors }

// Static hints for Node's CommonJS named-export detection (cjs-module-lexer), as lib/index.ts gives.
module.exports.digestInterceptor = digestInterceptor
module.exports.digestHeaders = digestHeaders
module.exports.digestBody = digestBody
module.exports.clientErrors = clientErrors
export = exported
