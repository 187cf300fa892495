// The client's error constructors, by code (exported as `clientErrors`; built in lib/core/errors.ts).
export { clientErrors } from '../core/errors'
