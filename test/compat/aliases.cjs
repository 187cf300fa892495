'use strict'
// Preloaded (NODE_OPTIONS=--require) by test/compat/run.js for one cell of
// the compatibility matrix: a package name the tests, lib/ and the examples
// import (`@fastify/static`) resolves to another major installed under an npm
// alias (`static8`, see package.json devDependencies). COMPAT_ALIASES holds
// the map as JSON, e.g. {"@fastify/static":"static8"}. Both loaders are
// covered: CommonJS through Module._resolveFilename, ES modules through a
// resolve hook (module.register, Node.js >= 20.6). Requests made from inside
// node_modules are left alone: only our code is pointed at the other major.
const Module = require('node:module')
const { pathToFileURL } = require('node:url')

const aliases = JSON.parse(process.env.COMPAT_ALIASES || '{}')

/** The aliased request, or undefined when `request` names none of the packages. */
function aliased (request) {
  for (const [name, alias] of Object.entries(aliases)) {
    if (request === name) return alias
    if (request.startsWith(name + '/')) return alias + request.slice(name.length)
  }
  return undefined
}

function fromOurCode (parentPath) {
  return typeof parentPath !== 'string' || !parentPath.includes('/node_modules/')
}

if (Object.keys(aliases).length > 0) {
  const resolveFilename = Module._resolveFilename
  Module._resolveFilename = function (request, parent, ...rest) {
    const target = fromOurCode(parent && parent.filename) ? aliased(request) : undefined
    return resolveFilename.call(this, target ?? request, parent, ...rest)
  }
  Module.register(pathToFileURL(require.resolve('./aliases-hooks.mjs')), { data: { aliases } })
}

module.exports = { aliased }
