'use strict'

// Shows the Node/V8 behaviour benchmarks/tick-maps.js guards against:
//
//   node benchmarks/tick-feedback.js
//
// In two child processes (with --allow-natives-syntax --expose-gc), one of
// them with tick-maps.js loaded first: nextTick() runs enough to get
// feedback, a full collection runs while no tick object is alive, nextTick()
// runs again; then the child prints the feedback state of the four stores of
// nextTick's tick-object literal. On Node 20.20 the child without
// tick-maps.js prints MONOMORPHIC MEGAMORPHIC MEGAMORPHIC MEGAMORPHIC:
// optimized code will build every tick object through the runtime.

const { execFileSync } = require('node:child_process')

function child () {
  if (process.argv[3] === 'keep') require('./tick-maps')
  // %DebugPrint needs --allow-natives-syntax, given to this child only.
  // eslint-disable-next-line no-new-func
  const debugPrint = new Function('f', '%DebugPrint(f)')
  const ticks = (n) => { for (let i = 0; i < n; i++) process.nextTick(() => {}) }
  ticks(50)
  setTimeout(() => {
    ticks(50)
    setTimeout(() => {
      global.gc()
      global.gc()
      ticks(1)
      setTimeout(() => debugPrint(process.nextTick), 10)
    }, 10)
  }, 10)
}

function parent () {
  for (const keep of [false, true]) {
    const args = ['--allow-natives-syntax', '--expose-gc', __filename, 'child']
    if (keep) args.push('keep')
    const out = execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    const states = [...out.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1])
    console.log(`${keep ? 'with' : 'without'} tick-maps.js:`.padEnd(24), states.join(' ') || '(no feedback printed)')
  }
}

if (process.argv[2] === 'child') child()
else parent()
