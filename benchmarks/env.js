'use strict'

// Settings from the environment, shared by the benchmarks and the load run.

/** A positive number from `process.env[name]`, or `fallback` when unset. */
function numberFromEnv (name, fallback) {
  const value = process.env[name]
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(value)}`)
  return n
}

/** Command-line flags from `process.env[name]`, separated by spaces; none when unset. */
function flagsFromEnv (name) {
  return (process.env[name] ?? '').split(' ').filter(Boolean)
}

module.exports = { flagsFromEnv, numberFromEnv }
