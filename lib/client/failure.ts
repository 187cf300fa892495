// The client's errors: an FST_DIGEST_* error (lib/core/errors.ts) carrying the
// `field` and `algorithm` at fault, both also named in its message.
import type { DigestClientError } from '../../types/client'
import { clientErrors } from './errors'

function withDetails (err: Error, field: string, algorithm: string | null): DigestClientError {
  return Object.assign(err, { field, algorithm }) as DigestClientError
}

export function mismatch (field: string, algorithm: string): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_RESPONSE_MISMATCH(field, algorithm), field, algorithm)
}

export function invalidValue (field: string, algorithm: string): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_RESPONSE_INVALID_VALUE(field, algorithm), field, algorithm)
}

export function invalidField (field: string, reason: string): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_RESPONSE_INVALID_FIELD(field, 'none', reason), field, null)
}

export function missing (algorithms: readonly string[]): DigestClientError {
  const field = 'Content-Digest, Repr-Digest or Unencoded-Digest'
  const algorithm = algorithms.join(', ')
  return withDetails(new clientErrors.FST_DIGEST_RESPONSE_MISSING(field, algorithm), field, algorithm)
}

/** A digest that could not be checked (`reason`), under verify: 'required'. */
export function unchecked (field: string, algorithm: string, reason: string): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_RESPONSE_UNCHECKED(field, algorithm, reason), field, algorithm)
}

export function rejected (field: string, algorithm: string | null, detail: string): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_REQUEST_REJECTED(field, algorithm ?? 'none', detail), field, algorithm)
}

export function notAcceptable (field: string, algorithm: string | null): DigestClientError {
  return withDetails(new clientErrors.FST_DIGEST_NOT_ACCEPTABLE(field, algorithm ?? 'none'), field, algorithm)
}
