'use strict'

// Loaded first by every benchmark process: keeps one of process.nextTick's tick objects alive for the life of the
// process. On Node.js 20 (V8 11.3) a full collection while no tick object is alive clears nextTick's feedback, its
// object literal's stores turn megamorphic for good, and every tick object is then built through the runtime: about
// a quarter more instructions for a 1 KiB GET. Which processes get there depends on when their start-up collections
// happen, so identical servers would split into a fast and a slow group at random (docs/benchmarks.md, "Method").

const { createHook } = require('node:async_hooks')

let kept = null
const hook = createHook({
  init (asyncId, type, triggerAsyncId, resource) {
    if (type === 'TickObject' && kept === null) kept = resource
  }
})
hook.enable()
process.nextTick(() => {})
hook.disable()

// Held by the module cache for as long as the process runs.
module.exports = { kept }
