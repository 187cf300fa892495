// fastify-digest-fields/client: RFC 9530 digest fields for undici 7 clients.
// Its own entry (dist/client/index.js); it does not load fastify, nor undici
// (only its types): the interceptor is given to the caller's dispatcher.
import { clientErrors } from './errors'
import { digestInterceptor } from './interceptor'
import { digestBody, digestHeaders } from './request-digest'

const exported = { digestInterceptor, digestHeaders, digestBody, clientErrors }

// Static hints for Node's CommonJS named-export detection (cjs-module-lexer),
// as lib/index.ts gives them: `import { digestInterceptor } from
// 'fastify-digest-fields/client'` works from ESM.
module.exports.digestInterceptor = digestInterceptor
module.exports.digestHeaders = digestHeaders
module.exports.digestBody = digestBody
module.exports.clientErrors = clientErrors
export = exported
