// The client's error constructors, by code (exported as `clientErrors`).
import type { DigestClientErrorCode } from '../../types/client'
import {
  FST_DIGEST_NOT_ACCEPTABLE,
  FST_DIGEST_REQUEST_REJECTED,
  FST_DIGEST_RESPONSE_INVALID_FIELD,
  FST_DIGEST_RESPONSE_INVALID_VALUE,
  FST_DIGEST_RESPONSE_MISMATCH,
  FST_DIGEST_RESPONSE_MISSING
} from '../errors'

export const clientErrors = {
  FST_DIGEST_RESPONSE_MISMATCH,
  FST_DIGEST_RESPONSE_INVALID_VALUE,
  FST_DIGEST_RESPONSE_INVALID_FIELD,
  FST_DIGEST_RESPONSE_MISSING,
  FST_DIGEST_REQUEST_REJECTED,
  FST_DIGEST_NOT_ACCEPTABLE
} as const satisfies Record<DigestClientErrorCode, unknown>
