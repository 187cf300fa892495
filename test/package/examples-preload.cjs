'use strict'

// Preloaded (`node --require`) into the example servers test/package/examples.test.ts
// runs: the examples listen on port 3000, as a user runs them; here port 3000
// becomes a free port (0), and the port the server got is sent to the parent
// test over IPC once it listens.
const net = require('node:net')

const listen = net.Server.prototype.listen
let reported = false

net.Server.prototype.listen = function (...args) {
  if (args[0] !== null && typeof args[0] === 'object' && Number(args[0].port) === 3000) {
    args[0] = { ...args[0], port: 0 }
  } else if (Number(args[0]) === 3000) {
    args[0] = 0
  } else {
    return listen.apply(this, args)
  }
  this.once('listening', () => {
    if (reported) return
    reported = true
    process.send?.({ port: this.address().port })
  })
  return listen.apply(this, args)
}
