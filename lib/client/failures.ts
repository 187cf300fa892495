// The client's errors: the FST_DIGEST_* errors of lib/core/errors.ts
// (`clientErrors`) carrying the `field` and `algorithm` at fault.
import type { DigestClientError, DigestClientErrorCode } from '../../types/client'
import { clientErrors } from '../core/errors'

export { clientErrors }

/** The error of `code`, its message naming `field`, the algorithm (or 'none') and `detail`. */
export function clientError (code: DigestClientErrorCode, field: string, algorithm: string | null, ...detail: [string?]): DigestClientError {
  const err = new clientErrors[code](field, algorithm ?? 'none', ...detail)
  return Object.assign(err, { field, algorithm }) as DigestClientError
}
