// Private keys shared by the plugin's modules.

/** Route config: the route's DigestParams. */
export const kRouteParams = Symbol('fastify-digest-fields.routeParams')
/** Request: what the response stages hand each other. */
export const kResponseState = Symbol('fastify-digest-fields.responseState')
/** Request: the body check. */
export const kRequestState = Symbol('fastify-digest-fields.requestState')
/** Request: request.digestVerification (null: worked out when read). */
export const kVerification = Symbol('fastify-digest-fields.verification')
/** Reply: reply.setReprDigest()'s and setUnencodedDigest()'s digests. */
export const kDeclared = Symbol('fastify-digest-fields.declared')
