// The FST_DIGEST_* errors (@fastify/error, as fastify's FST_ERR_*): option and programming errors
// are TypeErrors, request problems 4xx, the client's 502 as a gateway says of a bad upstream answer.
import createError, { type FastifyErrorConstructor } from '@fastify/error'
import type { DigestErrorCode } from '../../types/index'
import type { DigestClientErrorCode } from '../../types/client'

type Errors<C extends string> = { readonly [K in C]: FastifyErrorConstructor<{ code: K, statusCode: number }> }

// Every code: [message, status, TypeError for an option or programming error]. The client's codes are the 502s.
const definitions: Record<DigestErrorCode | DigestClientErrorCode, readonly [string, number, TypeErrorConstructor?]> = {
  FST_DIGEST_INVALID_OPTION: ['Invalid fastify-digest-fields option "%s": %s', 500, TypeError],
  FST_DIGEST_INVALID_ROUTE_OPTION: ['Invalid digest route option for %s %s: %s', 500, TypeError],
  FST_DIGEST_ALREADY_REGISTERED: [
    'fastify-digest-fields is already registered in this scope or a parent one: register it once, and give routes ' +
      'their own settings with the digest route option',
    500
  ],
  FST_DIGEST_UNKNOWN_ALGORITHM: [
    'Unknown digest algorithm "%s"; known: sha-256, sha-512, md5, sha, unixsum, unixcksum, adler, crc32c',
    500,
    TypeError
  ],
  FST_DIGEST_INVALID_DECLARED_DIGEST: ['reply.setReprDigest(): %s', 500, TypeError],
  FST_DIGEST_INVALID_FIELD: ['Malformed %s field: %s', 400],
  FST_DIGEST_MISMATCH: ['The %s field does not match the content', 400],
  FST_DIGEST_INVALID_VALUE: ['The %s field carries a value that the algorithm cannot produce', 400],
  FST_DIGEST_UNSUPPORTED_ALGORITHM: ['The %s field names no algorithm this server accepts', 400],
  FST_DIGEST_MISSING: ['This route requires a Content-Digest or Repr-Digest for the request content', 400],
  FST_DIGEST_UNSUPPORTED_ENCODING: ['Cannot verify the %s field: content coding "%s" cannot be decoded here', 415],
  FST_DIGEST_INVALID_ENCODING: ['Cannot verify the %s field: the content is not valid %s', 400],
  FST_DIGEST_CONTENT_TOO_LARGE: [
    'Cannot verify the %s field: the decoded content exceeds the body limit of %s bytes', 413
  ],
  FST_DIGEST_UNREAD_TOO_LARGE: [
    'Cannot verify the %s field: the route answered before reading the body, and the rest exceeds its body limit ' +
      'of %s bytes',
    413
  ],
  FST_DIGEST_INCOMPLETE: ['The request content ended before it could be checked', 400],
  FST_DIGEST_TRAILER_UNANNOUNCED: ['The %s trailer field arrived without being announced in the Trailer field, ' +
    'so the content was not hashed for it: announce it (Trailer: %s)', 400],
  FST_DIGEST_SIDECAR_WRONG: ['The sidecar %s does not match the file %s (%s): the response made with it failed, ' +
    'and the file\'s own digests are used from now on', 500],
  FST_DIGEST_FILE_CHANGED: [
    'The file %s changed while it was sent: its bytes do not match the %s digest the response was sent with, so the ' +
      'response was cut off',
    500
  ],
  FST_DIGEST_FIELD_HOOK_FAILED: ['The onDigestFields hook failed: %s', 500],
  FST_DIGEST_STALE_REPRESENTATION: [
    'The request\'s Repr-Digest does not match the current representation, whose digest is in the Repr-Digest field',
    406
  ],
  FST_DIGEST_RESPONSE_MISMATCH: ['The response %s field does not match the content for %s', 502],
  FST_DIGEST_RESPONSE_REENCODED: ['The response %s field (algorithm %s) was not verified: it does not match the ' +
    'content received, but %s matched the decoded content, so the body was re-encoded after the server computed ' +
    'its digests (for example by a proxy or CDN that compressed it)', 502],
  FST_DIGEST_RESPONSE_INVALID_VALUE: [
    'The response %s field carries a %s value that the algorithm cannot produce', 502
  ],
  FST_DIGEST_RESPONSE_INVALID_FIELD: ['Malformed response %s field (algorithm %s): %s', 502],
  FST_DIGEST_RESPONSE_UNCHECKED: [
    'The response %s field (algorithm %s) could not be checked: %s; verify is \'required\'', 502
  ],
  FST_DIGEST_RESPONSE_MISSING: ['The response carries no usable %s (algorithm %s): verify is \'required\'', 502],
  FST_DIGEST_REQUEST_REJECTED: ['The server refused the request\'s %s field (algorithm %s): %s', 502],
  FST_DIGEST_NOT_ACCEPTABLE: [
    'The server answered 406 to the request\'s %s field (algorithm %s): the representation differs', 502
  ]
}

function build<C extends string> (client: boolean): Errors<C> {
  return Object.fromEntries(Object.entries(definitions)
    .filter(([, [, status]]) => (status === 502) === client)
    .map(([code, [message, status, Base]]) => [code, createError(code, message, status, Base)])) as Errors<C>
}

/** The plugin's errors by code (exported as `errors`). */
export const errors = build<DigestErrorCode>(false)

/** The client's errors by code (exported by fastify-digest-fields/client as `clientErrors`). */
export const clientErrors = build<DigestClientErrorCode>(true)

export const {
  FST_DIGEST_INVALID_OPTION, FST_DIGEST_INVALID_ROUTE_OPTION, FST_DIGEST_ALREADY_REGISTERED,
  FST_DIGEST_UNKNOWN_ALGORITHM,
  FST_DIGEST_INVALID_DECLARED_DIGEST, FST_DIGEST_INVALID_FIELD, FST_DIGEST_MISMATCH, FST_DIGEST_INVALID_VALUE,
  FST_DIGEST_UNSUPPORTED_ALGORITHM, FST_DIGEST_MISSING, FST_DIGEST_UNSUPPORTED_ENCODING, FST_DIGEST_INVALID_ENCODING,
  FST_DIGEST_CONTENT_TOO_LARGE, FST_DIGEST_UNREAD_TOO_LARGE, FST_DIGEST_INCOMPLETE, FST_DIGEST_TRAILER_UNANNOUNCED,
  FST_DIGEST_SIDECAR_WRONG, FST_DIGEST_FILE_CHANGED,
  FST_DIGEST_FIELD_HOOK_FAILED, FST_DIGEST_STALE_REPRESENTATION
} = errors
