// The response side lives in lib/response/, one file per stage: plan.ts
// (what a response carries, pure), precondition.ts (the 406 rule, pure),
// representation.ts, content.ts, emit.ts, files.ts and file-cache.ts
// (@fastify/static), hooks.ts (the glue). This module only keeps the name
// docs/benchmarks.md's notes use until they follow.
export { installResponseDigests } from './response/hooks'
