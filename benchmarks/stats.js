'use strict'

// Figures shared by the benchmark runners.

/** The median of `values` (the mean of the two middle ones for an even count); 0 for none. */
function median (values) {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

module.exports = { median }
