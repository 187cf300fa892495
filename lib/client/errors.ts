// The client's errors (exported as `clientErrors`): FST_DIGEST_* errors of
// lib/core/errors.ts carrying the `field` and `algorithm` at fault.
import type { DigestClientError, DigestClientErrorCode } from '../../types/client'
import {
  FST_DIGEST_NOT_ACCEPTABLE, FST_DIGEST_REQUEST_REJECTED, FST_DIGEST_RESPONSE_INVALID_FIELD, FST_DIGEST_RESPONSE_INVALID_VALUE,
  FST_DIGEST_RESPONSE_MISMATCH, FST_DIGEST_RESPONSE_MISSING, FST_DIGEST_RESPONSE_UNCHECKED
} from '../core/errors'

export const clientErrors = {
  FST_DIGEST_RESPONSE_MISMATCH,
  FST_DIGEST_RESPONSE_INVALID_VALUE,
  FST_DIGEST_RESPONSE_INVALID_FIELD,
  FST_DIGEST_RESPONSE_MISSING,
  FST_DIGEST_RESPONSE_UNCHECKED,
  FST_DIGEST_REQUEST_REJECTED,
  FST_DIGEST_NOT_ACCEPTABLE
} as const satisfies Record<DigestClientErrorCode, unknown>

/** The error of `code`, its message naming `field`, the algorithm (or 'none') and `detail`. */
export function clientError (code: DigestClientErrorCode, field: string, algorithm: string | null, ...detail: [string?]): DigestClientError {
  const err = new clientErrors[code](field, algorithm ?? 'none', ...detail)
  return Object.assign(err, { field, algorithm }) as DigestClientError
}
