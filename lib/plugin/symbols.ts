// Private keys shared by the plugin's modules.

/** Route config key holding the route's normalized DigestParams (set in onRoute). */
export const kRouteParams = Symbol('fastify-digest-fields.routeParams')
/** Request decorator: per-request response digest state. */
export const kResponseState = Symbol('fastify-digest-fields.responseState')
/** Request decorator: per-request request-verification state. */
export const kRequestState = Symbol('fastify-digest-fields.requestState')
/** Request decorator: the request.digestVerification set by the verifier (null: worked out when read). */
export const kVerification = Symbol('fastify-digest-fields.verification')
/**
 * Reply decorator: digests declared with reply.setReprDigest(); an empty map
 * when only reply.setUnencodedDigest() was called, so that one read tells
 * whether anything was declared.
 */
export const kDeclared = Symbol('fastify-digest-fields.declared')
/** Reply decorator: digests declared with reply.setUnencodedDigest(). */
export const kDeclaredUnencoded = Symbol('fastify-digest-fields.declaredUnencoded')
