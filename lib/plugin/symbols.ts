// Private keys shared by the plugin's modules.
export const kRouteParams = Symbol('fastify-digest-fields.routeParams') // route config: the route's DigestParams
export const kResponseState = Symbol('fastify-digest-fields.responseState') // request: what the response stages hand each other
export const kRequestState = Symbol('fastify-digest-fields.requestState') // request: the body check
export const kVerification = Symbol('fastify-digest-fields.verification') // request: request.digestVerification (null: worked out when read)
export const kDeclared = Symbol('fastify-digest-fields.declared') // reply: reply.setReprDigest()'s and setUnencodedDigest()'s digests
