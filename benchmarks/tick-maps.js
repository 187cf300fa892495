'use strict'

// Loaded first by every benchmark process (runner and servers), before
// anything else runs: it keeps one of Node's tick objects alive for the
// life of the process. Why (measured on Node 20.20, V8 11.3; docs/benchmarks.md,
// "The slow process state"):
//
// process.nextTick() builds each tick object with an object literal whose
// keys are computed (`{ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
// callback, args }`). nextTick's feedback records the maps the literal goes
// through, weakly. A full garbage collection at a moment when no tick object
// is alive frees those maps; the next nextTick() finds its feedback cleared,
// V8 marks the literal's stores megamorphic for good, and optimized code then
// builds every tick object through the runtime: about +35 000 instructions
// per request for a 1 KiB GET, a quarter of the request. Whether a process
// gets there depends on when its start-up collections happen, so identical
// server processes split into a fast and a slow group at random (more often
// the more a process allocates while starting). Neither side of a scenario
// causes it, and it would decide the ratios if left alone.
//
// One tick object that stays alive keeps those maps alive: every process
// starts in the same, fast state. `node --allow-natives-syntax --expose-gc
// benchmarks/tick-feedback.js` shows the effect in isolation.

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
