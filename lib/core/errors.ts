// Error constructors, one per FST_DIGEST_* code (built with @fastify/error, as fastify's own FST_ERR_* are).
// Option problems are TypeErrors thrown at registration or route time;
// request problems carry a 4xx status and become problem details.
import createError from '@fastify/error'
import type { DigestErrorCode } from '../../types/index'

export const FST_DIGEST_INVALID_OPTION = createError(
  'FST_DIGEST_INVALID_OPTION', 'Invalid fastify-digest-fields option "%s": %s', 500, TypeError)

export const FST_DIGEST_INVALID_ROUTE_OPTION = createError(
  'FST_DIGEST_INVALID_ROUTE_OPTION', 'Invalid digest route option for %s %s: %s', 500, TypeError)

export const FST_DIGEST_ALREADY_REGISTERED = createError(
  'FST_DIGEST_ALREADY_REGISTERED', 'fastify-digest-fields is already registered in this scope or a parent one: register it once, and give routes their own settings with the digest route option', 500)

export const FST_DIGEST_UNKNOWN_ALGORITHM = createError(
  'FST_DIGEST_UNKNOWN_ALGORITHM', 'Unknown digest algorithm "%s"; known: sha-256, sha-512, md5, sha, unixsum, unixcksum, adler, crc32c', 500, TypeError)

export const FST_DIGEST_INVALID_DECLARED_DIGEST = createError(
  'FST_DIGEST_INVALID_DECLARED_DIGEST', 'reply.setReprDigest(): %s', 500, TypeError)

export const FST_DIGEST_INVALID_FIELD = createError(
  'FST_DIGEST_INVALID_FIELD', 'Malformed %s field: %s', 400)

export const FST_DIGEST_MISMATCH = createError(
  'FST_DIGEST_MISMATCH', 'The %s field does not match the content', 400)

export const FST_DIGEST_INVALID_VALUE = createError(
  'FST_DIGEST_INVALID_VALUE', 'The %s field carries a value that the algorithm cannot produce', 400)

export const FST_DIGEST_UNSUPPORTED_ALGORITHM = createError(
  'FST_DIGEST_UNSUPPORTED_ALGORITHM', 'The %s field names no algorithm this server accepts', 400)

export const FST_DIGEST_MISSING = createError(
  'FST_DIGEST_MISSING', 'This route requires a Content-Digest or Repr-Digest for the request content', 400)

export const FST_DIGEST_UNSUPPORTED_ENCODING = createError(
  'FST_DIGEST_UNSUPPORTED_ENCODING', 'Cannot verify the %s field: content coding "%s" cannot be decoded here', 415)

export const FST_DIGEST_INVALID_ENCODING = createError(
  'FST_DIGEST_INVALID_ENCODING', 'Cannot verify the %s field: the content is not valid %s', 400)

export const FST_DIGEST_CONTENT_TOO_LARGE = createError(
  'FST_DIGEST_CONTENT_TOO_LARGE', 'Cannot verify the %s field: the decoded content exceeds the body limit of %s bytes', 413)

export const FST_DIGEST_UNREAD_TOO_LARGE = createError(
  'FST_DIGEST_UNREAD_TOO_LARGE', 'Cannot verify the %s field: the route answered before reading the body, and the rest exceeds its body limit of %s bytes', 413)

export const FST_DIGEST_INCOMPLETE = createError(
  'FST_DIGEST_INCOMPLETE', 'The request content ended before it could be checked', 400)

export const FST_DIGEST_FILE_CHANGED = createError(
  'FST_DIGEST_FILE_CHANGED', 'The file %s changed while it was sent: its bytes do not match the %s digest the response was sent with, so the response was cut off', 500)

// The onDigestFields hook threw, rejected or returned something that is no
// fields (lib/plugin/response/field-hook.ts): the response is never sent as if its
// hook had run. The hook's error is the cause.
export const FST_DIGEST_FIELD_HOOK_FAILED = createError(
  'FST_DIGEST_FIELD_HOOK_FAILED', 'The onDigestFields hook failed: %s', 500)

// The 406 rule's answer (lib/core/precondition.ts): never thrown, its
// code and message are the 406's problem details.
export const FST_DIGEST_STALE_REPRESENTATION = createError(
  'FST_DIGEST_STALE_REPRESENTATION', 'The request\'s Repr-Digest does not match the current representation, whose digest is in the Repr-Digest field', 406)

export const errors = {
  FST_DIGEST_INVALID_OPTION,
  FST_DIGEST_INVALID_ROUTE_OPTION,
  FST_DIGEST_ALREADY_REGISTERED,
  FST_DIGEST_UNKNOWN_ALGORITHM,
  FST_DIGEST_INVALID_DECLARED_DIGEST,
  FST_DIGEST_INVALID_FIELD,
  FST_DIGEST_MISMATCH,
  FST_DIGEST_INVALID_VALUE,
  FST_DIGEST_UNSUPPORTED_ALGORITHM,
  FST_DIGEST_MISSING,
  FST_DIGEST_UNSUPPORTED_ENCODING,
  FST_DIGEST_INVALID_ENCODING,
  FST_DIGEST_CONTENT_TOO_LARGE,
  FST_DIGEST_UNREAD_TOO_LARGE,
  FST_DIGEST_INCOMPLETE,
  FST_DIGEST_FILE_CHANGED,
  FST_DIGEST_FIELD_HOOK_FAILED,
  FST_DIGEST_STALE_REPRESENTATION
} as const satisfies Record<DigestErrorCode, unknown>

// The client's (fastify-digest-fields/client, collected in
// lib/client/errors.ts): a response that failed its check. Each carries
// `field` and `algorithm` too (clientError()), named in the message;
// 502, as a gateway would say of a bad upstream answer.

export const FST_DIGEST_RESPONSE_MISMATCH = createError(
  'FST_DIGEST_RESPONSE_MISMATCH', 'The response %s field does not match the content for %s', 502)

export const FST_DIGEST_RESPONSE_INVALID_VALUE = createError(
  'FST_DIGEST_RESPONSE_INVALID_VALUE', 'The response %s field carries a %s value that the algorithm cannot produce', 502)

export const FST_DIGEST_RESPONSE_INVALID_FIELD = createError(
  'FST_DIGEST_RESPONSE_INVALID_FIELD', 'Malformed response %s field (algorithm %s): %s', 502)

export const FST_DIGEST_RESPONSE_UNCHECKED = createError(
  'FST_DIGEST_RESPONSE_UNCHECKED', 'The response %s field (algorithm %s) could not be checked: %s; verify is \'required\'', 502)

export const FST_DIGEST_RESPONSE_MISSING = createError(
  'FST_DIGEST_RESPONSE_MISSING', 'The response carries no usable %s (algorithm %s): verify is \'required\'', 502)

export const FST_DIGEST_REQUEST_REJECTED = createError(
  'FST_DIGEST_REQUEST_REJECTED', 'The server refused the request\'s %s field (algorithm %s): %s', 502)

export const FST_DIGEST_NOT_ACCEPTABLE = createError(
  'FST_DIGEST_NOT_ACCEPTABLE', 'The server answered 406 to the request\'s %s field (algorithm %s): the representation differs', 502)
